package nodecli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// What a terminal session shows around valkey-cli's password prompt, whichever way the
// terminal's output is cut into writes: everything but the prompt and the line it is answered
// on (a mask, or an echo on a terminal valkey-cli thinks is dumb).
func TestPromptFilter(t *testing.T) {
	session := "motd\r\n" + prompt + "\r" + prompt + "****\r\x1b[0K" + "s3cret\r\n" + "10.0.0.1:6379> GET k\r\n\"v\"\r\n"
	want := "motd\r\n" + "10.0.0.1:6379> GET k\r\n\"v\"\r\n"
	for _, size := range []int{1, 2, 5, len(prompt) - 1, len(prompt), len(prompt) + 1, 64, len(session)} {
		var out bytes.Buffer
		f := newPromptFilter(&out)
		for rest := session; rest != ""; {
			n := min(size, len(rest))
			if w, err := f.Write([]byte(rest[:n])); w != n || err != nil {
				t.Fatalf("writes of %d: wrote %d, %v", size, w, err)
			}
			rest = rest[n:]
		}
		f.flush()
		if out.String() != want {
			t.Errorf("writes of %d bytes show %q, want %q", size, out.String(), want)
		}
		select {
		case <-f.asked:
		default:
			t.Errorf("writes of %d bytes: the prompt was not noticed", size)
		}
	}

	// valkey-cli failing before it asks: everything it said is shown.
	var out bytes.Buffer
	f := newPromptFilter(&out)
	_, _ = f.Write([]byte("Unrecognized option or bad number of args for: '--askpass'\n"))
	f.flush()
	if out.String() != "Unrecognized option or bad number of args for: '--askpass'\n" {
		t.Errorf("without a prompt: %q", out.String())
	}
}

// The input of a terminal session: the password only once asked, then what the user types.
func TestAfterPrompt(t *testing.T) {
	asked := make(chan struct{})
	in := &afterPrompt{ctx: context.Background(), asked: asked, password: "s3cret\r", rest: strings.NewReader("GET k\r")}
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(in)
		got <- string(b)
	}()
	// Long enough for a reader that does not wait to have read everything.
	select {
	case s := <-got:
		t.Fatalf("read %q before the prompt", s)
	case <-time.After(100 * time.Millisecond):
	}
	close(asked)
	if s := <-got; s != "s3cret\rGET k\r" {
		t.Errorf("read %q", s)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	never := &afterPrompt{ctx: ctx, asked: make(chan struct{}), password: "s3cret\r"}
	if n, err := never.Read(make([]byte, 64)); n != 0 || err != io.EOF {
		t.Errorf("a session ended before the prompt reads %d, %v; want EOF", n, err)
	}
}
