package backup

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// A stranger that reaches the listener — blank lines, commands before AUTH, a wrong password —
// is refused and dropped, and the listener waits on for the target (found by a review: a blank
// line made the handshake index an empty command and crashed the process).
func TestTheLoadListenerRefusesStrangers(t *testing.T) {
	f := fullSync{token: "t0ken", connected: make(chan struct{})}
	for _, tc := range []struct{ send, want string }{
		{"\r\n   \r\nPING\r\nREPLCONF capa eof\r\n", "+PONG"},
		{"*3\r\n$4\r\nAUTH\r\n$7\r\nrestore\r\n$5\r\nguess\r\n", "-WRONGPASS"},
		{"*2\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n", "-NOAUTH"},
	} {
		client, server := net.Pipe()
		result := make(chan bool, 1)
		go func() {
			done, _ := f.handle(context.Background(), server, func() {})
			result <- done
		}()
		_ = client.SetDeadline(time.Now().Add(5 * time.Second))
		go func() { _, _ = client.Write([]byte(tc.send)) }()
		line, err := bufio.NewReader(client).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, tc.want) {
			t.Errorf("sent %q: got %q (%v), want %s", tc.send, line, err, tc.want)
		}
		_ = client.Close()
		if <-result {
			t.Errorf("sent %q: the stranger was taken for the target", tc.send)
		}
	}
	select {
	case <-f.connected:
		t.Fatal("a stranger counted as the target connecting")
	default:
	}
}
