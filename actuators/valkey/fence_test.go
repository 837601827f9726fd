package valkey

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAnIsolatedPrimaryRefusesWritesWithinTheBound measures what the failover's fence timeout
// rests on, on a real valkey-server: the test plays the replica itself over the replication
// protocol, so it knows to the millisecond when the last acknowledgement left, then stops
// acknowledging (as a partition would) and writes until the primary answers NOREPLICAS.
// Every refusal must come within IsolatedPrimaryStopsWritesWithin(maxLag).
func TestAnIsolatedPrimaryRefusesWritesWithinTheBound(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes, ~20 s")
	}
	const maxLag = 1
	s := startServerWith(t, "127.78.0.8", fmt.Sprintf("save \"\"\nappendonly no\nmin-replicas-to-write 1\nmin-replicas-max-lag %d\n", maxLag))
	ctx := context.Background()
	p := newTestPool(t)
	v := survey(t, p, s)
	if err := p.Promote(ctx, s.ip, v.RunID); err != nil {
		t.Fatal(err)
	}
	if err := p.OpenWrites(ctx, s.ip, v.RunID); err != nil {
		t.Fatal(err)
	}
	repl := dialFakeReplica(t, s.ip)
	app := dialRaw(t, s.ip, UserClient, testPasswords.Client)
	bound := IsolatedPrimaryStopsWritesWithin(maxLag * time.Second)
	var worst time.Duration
	for i := 0; i < 6; i++ {
		// Acknowledge every 50 ms until writes are accepted, for a while of varying length so
		// that the last acknowledgement falls at a different point of Valkey's second each time.
		until := time.Now().Add(time.Second + time.Duration(i)*170*time.Millisecond)
		for time.Now().Before(until) || app.set(t) != "OK" {
			repl.ack(t)
			time.Sleep(50 * time.Millisecond)
		}
		repl.ack(t)
		last := time.Now()
		for {
			reply := app.set(t)
			if strings.HasPrefix(reply, "NOREPLICAS") {
				break
			}
			if reply != "OK" {
				t.Fatalf("SET: %s", reply)
			}
			if time.Since(last) > bound+2*time.Second {
				t.Fatalf("the primary still accepts writes %s after the last acknowledgement", time.Since(last))
			}
			time.Sleep(2 * time.Millisecond)
		}
		took := time.Since(last)
		worst = max(worst, took)
		t.Logf("refused %s after the last acknowledgement (bound %s)", took.Round(time.Millisecond), bound)
		if took > bound {
			t.Fatalf("an isolated primary accepted writes %s after its replica's last acknowledgement, beyond the fence bound %s", took, bound)
		}
	}
	if worst <= maxLag*time.Second {
		t.Fatalf("every refusal came within maxLag (%s): the measurement is not seeing Valkey's rounding", worst)
	}
}

// rawConn speaks RESP on one connection.
type rawConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, ip, user, pass string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", Addr(ip), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	rc := &rawConn{c: c, r: bufio.NewReader(c)}
	if reply := rc.do(t, "AUTH", user, pass); reply != "OK" {
		t.Fatalf("AUTH %s: %s", user, reply)
	}
	return rc
}

func (rc *rawConn) send(t *testing.T, args ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := rc.c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
}

// do sends a command and returns its one-line reply without the type byte.
func (rc *rawConn) do(t *testing.T, args ...string) string {
	t.Helper()
	rc.send(t, args...)
	_ = rc.c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, err := rc.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(line[1:])
}

func (rc *rawConn) set(t *testing.T) string { return rc.do(t, "SET", "k", "v") }

// fakeReplica is a replica the test drives: it full-syncs once, then acknowledges only when
// told, and drains the stream so that its acknowledged offset is the primary's.
type fakeReplica struct {
	*rawConn
	offset int64
}

func dialFakeReplica(t *testing.T, ip string) *fakeReplica {
	t.Helper()
	rc := dialRaw(t, ip, UserReplication, testPasswords.Replication)
	if reply := rc.do(t, "REPLCONF", "listening-port", "6380"); reply != "OK" {
		t.Fatalf("REPLCONF: %s", reply)
	}
	reply := rc.do(t, "PSYNC", "?", "-1")
	f := strings.Fields(reply)
	if len(f) != 3 || f[0] != "FULLRESYNC" {
		t.Fatalf("PSYNC: %s", reply)
	}
	off, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot comes as $<len>\r\n<bytes> (no EOF capability announced), after newlines
	// the primary sends while it prepares it.
	for {
		line, err := rc.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "$") {
			n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.CopyN(io.Discard, rc.r, int64(n)); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	return &fakeReplica{rawConn: rc, offset: off}
}

// ack drains what the primary streamed and acknowledges it.
func (f *fakeReplica) ack(t *testing.T) {
	t.Helper()
	_ = f.c.SetReadDeadline(time.Now().Add(time.Millisecond))
	buf := make([]byte, 64<<10)
	for {
		n, err := f.r.Read(buf)
		f.offset += int64(n)
		if err != nil {
			break
		}
	}
	f.send(t, "REPLCONF", "ACK", strconv.FormatInt(f.offset, 10))
}
