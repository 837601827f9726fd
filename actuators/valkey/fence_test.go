package valkey

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/internal/resp"
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
		for time.Now().Before(until) || set(t, app) != "OK" {
			repl.ack(t)
			time.Sleep(50 * time.Millisecond)
		}
		repl.ack(t)
		last := time.Now()
		for {
			reply := set(t, app)
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

// dialRaw connects to a node as user over one bare RESP connection.
func dialRaw(t *testing.T, ip, user, pass string) *resp.Conn {
	t.Helper()
	c, err := resp.Dial(Addr(ip), netip.Addr{}, user, pass, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// set writes one key and returns the reply: "OK" or the error reply's text.
func set(t *testing.T, c *resp.Conn) string {
	t.Helper()
	v, err := c.Do(2*time.Second, "SET", "k", "v")
	if resp.IsReplyError(err) {
		return err.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(v)
}

// fakeReplica is a replica the test drives: it full-syncs once, then acknowledges only when
// told, and drains the stream so that its acknowledged offset is the primary's.
type fakeReplica struct {
	*resp.Conn
	offset int64
}

func dialFakeReplica(t *testing.T, ip string) *fakeReplica {
	t.Helper()
	c := dialRaw(t, ip, UserReplication, testPasswords.Replication)
	if _, err := c.Do(2*time.Second, "REPLCONF", "listening-port", "6380"); err != nil {
		t.Fatalf("REPLCONF: %v", err)
	}
	reply, err := c.Do(2*time.Second, "PSYNC", "?", "-1")
	f := strings.Fields(fmt.Sprint(reply))
	if err != nil || len(f) != 3 || f[0] != "FULLRESYNC" {
		t.Fatalf("PSYNC: %v %v", reply, err)
	}
	off, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot comes as $<len>\r\n<bytes> (no EOF capability announced), after newlines
	// the primary sends while it prepares it.
	r := c.Stream(time.Now().Add(5 * time.Second))
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "$") {
			n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	return &fakeReplica{Conn: c, offset: off}
}

// ack drains what the primary streamed and acknowledges it.
func (f *fakeReplica) ack(t *testing.T) {
	t.Helper()
	r := f.Stream(time.Now().Add(time.Millisecond))
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		f.offset += int64(n)
		if err != nil {
			break
		}
	}
	if err := f.Send(time.Second, "REPLCONF", "ACK", strconv.FormatInt(f.offset, 10)); err != nil {
		t.Fatal(err)
	}
}
