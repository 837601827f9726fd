package netfault

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestPartitionDropsBothDirectionsOnly(t *testing.T) {
	tb := newTable(t, t.Name())
	const a, b, c = "127.251.1.1", "127.251.1.2", "127.251.1.3"
	sa, sb := startServer(t, a), startServer(t, b)

	mustReach(t, a, sb)
	mustReach(t, b, sa)
	if t.Failed() {
		t.FailNow()
	}

	if err := tb.Partition(netip.MustParseAddr(a), netip.MustParseAddr(b)); err != nil {
		t.Fatal(err)
	}
	mustTimeOut(t, a, sb)
	mustTimeOut(t, b, sa)
	mustReach(t, c, sb) // a third address is not partitioned
	mustReach(t, c, sa)
	mustReach(t, a, sa) // nor is a from itself
	mustReach(t, "", sb)

	if err := tb.Heal(); err != nil {
		t.Fatal(err)
	}
	mustReach(t, a, sb)
	mustReach(t, b, sa)
	if t.Failed() {
		rules, _ := tb.Rules()
		t.Log(rules)
	}
}

func TestPartitionStallsEstablishedConnection(t *testing.T) {
	tb := newTable(t, t.Name())
	const a, b = "127.251.2.1", "127.251.2.2"
	sb := startServer(t, b)

	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(a)}, Timeout: time.Second}
	conn, err := d.Dial("tcp", sb.addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	r := bufio.NewReader(conn)
	if _, err := r.ReadString('\n'); err != nil { // greeting
		t.Fatal(err)
	}

	if err := tb.Partition(netip.MustParseAddr(a), netip.MustParseAddr(b)); err != nil {
		t.Fatal(err)
	}
	// The write is only queued: TCP keeps retransmitting, like across a real partition.
	if _, err := conn.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(blockedAfter))
	if line, err := r.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read across the partition: want a timeout, got %q, %v", line, err)
	}

	if err := tb.Heal(); err != nil {
		t.Fatal(err)
	}
	// The next retransmission (the back-off is still short) delivers the echo.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := r.ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("after Heal: want the echo, got %q, %v", line, err)
	}
}

func TestIsolate(t *testing.T) {
	tb := newTable(t, t.Name())
	const a, b, c = "127.251.3.1", "127.251.3.2", "127.251.3.3"
	sa, sb, sc := startServer(t, a), startServer(t, b), startServer(t, c)
	ipA := netip.MustParseAddr(a)

	if err := tb.Isolate(ipA); err != nil {
		t.Fatal(err)
	}
	mustTimeOut(t, a, sb)
	mustTimeOut(t, a, sc)
	mustTimeOut(t, b, sa)
	mustTimeOut(t, c, sa)
	mustTimeOut(t, "", sa) // unbound clients come from 127.0.0.1, which is "another address"
	mustReach(t, a, sa)    // a pod keeps talking to itself
	mustReach(t, b, sc)    // the others keep talking to each other
	mustReach(t, c, sb)
	mustReach(t, "", sb)

	if err := tb.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := tb.Isolate(ipA, netip.MustParseAddr(c), netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	mustReach(t, a, sc)
	mustReach(t, c, sa)
	mustReach(t, "", sa)
	mustTimeOut(t, a, sb)
	mustTimeOut(t, b, sa)

	if err := tb.Heal(); err != nil {
		t.Fatal(err)
	}
	mustReach(t, a, sb)
	mustReach(t, b, sa)
}

func TestRefusesNonLoopbackAndMixedFamilies(t *testing.T) {
	tb := newTable(t, t.Name())
	lo := netip.MustParseAddr("127.251.4.1")
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"partition with a private address", tb.Partition(lo, netip.MustParseAddr("10.0.0.1"))},
		{"partition with ::1", tb.Partition(lo, netip.MustParseAddr("::1"))},
		{"partition with the zero Addr", tb.Partition(lo, netip.Addr{})},
		{"isolate a public address", tb.Isolate(netip.MustParseAddr("8.8.8.8"))},
		{"isolate with a non-loopback exception", tb.Isolate(lo, netip.MustParseAddr("192.168.1.1"))},
	} {
		if tc.err == nil {
			t.Errorf("%s: want an error, got none", tc.name)
		}
	}
	rules, err := tb.Rules()
	if err != nil {
		t.Fatal(err)
	}
	if n := countDrops(rules); n != 0 {
		t.Errorf("refused calls left %d drop rules:\n%s", n, rules)
	}
}

func TestCloseDeletesTableAndIsIdempotent(t *testing.T) {
	tb := newTable(t, t.Name())
	if err := tb.Partition(netip.MustParseAddr("127.251.5.1"), netip.MustParseAddr("127.251.5.2")); err != nil {
		t.Fatal(err)
	}
	if !contains(tableNames(t), tb.Name()) {
		t.Fatalf("table %s not listed after New", tb.Name())
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if contains(tableNames(t), tb.Name()) {
		t.Errorf("table %s still listed after Close", tb.Name())
	}
	if err := tb.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := tb.Heal(); !errors.Is(err, ErrClosed) {
		t.Errorf("Heal after Close: want ErrClosed, got %v", err)
	}
	// The name is free again.
	again := newTable(t, t.Name())
	if again.Name() != tb.Name() {
		t.Errorf("re-opened table is %s, want %s", again.Name(), tb.Name())
	}
}

func TestNewRefusesOpenName(t *testing.T) {
	newTable(t, "dup")
	if tb, err := New("dup"); err == nil {
		_ = tb.Close()
		t.Fatal("second New with the same owner: want an error, got a table")
	}
}

func TestNewReplacesStaleTableOfSamePid(t *testing.T) {
	skipUnlessPrivileged(t)
	// A table with our name that this process did not open: the leftover of a dead process
	// that had our pid. New must start from an empty table, not inherit its rules.
	name := tableName(t.Name(), os.Getpid())
	stale := fmt.Sprintf("table inet %[1]s {\n chain output {\n type filter hook output priority 0; policy accept;\n ip saddr 127.251.6.1 drop\n }\n}\n", name)
	if err := runNft(stale); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = runNft("delete table inet " + name + "\n") })

	tb := newTable(t, t.Name())
	rules, err := tb.Rules()
	if err != nil {
		t.Fatal(err)
	}
	if n := countDrops(rules); n != 0 {
		t.Errorf("New kept %d rules of the stale table:\n%s", n, rules)
	}
}

func TestSweepStale(t *testing.T) {
	live := newTable(t, t.Name()+"_live")

	// A pid that surely ran and no longer does: a child we started and reaped.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid := cmd.Process.Pid
	if err := syscall.Kill(deadPid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Skipf("pid %d of a reaped child was reused already (%v)", deadPid, err)
	}
	dead := tableName(t.Name()+"_dead", deadPid)
	if err := runNft(fmt.Sprintf("table inet %s {\n chain output {\n type filter hook output priority 0; policy accept;\n }\n}\n", dead)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if contains(tableNames(t), dead) {
			_ = runNft("delete table inet " + dead + "\n")
		}
	})

	if err := SweepStale(); err != nil {
		t.Fatal(err)
	}
	names := tableNames(t)
	if contains(names, dead) {
		t.Errorf("table %s of dead pid %d survived SweepStale", dead, deadPid)
	}
	if !contains(names, live.Name()) {
		t.Errorf("table %s of this running process was swept", live.Name())
	}
}

func TestTableName(t *testing.T) {
	for owner, want := range map[string]string{
		"TestFoo/sub case": "vkfsm_testfoo_sub_case_42",
		"__x--y__":         "vkfsm_x_y_42",
		"":                 "vkfsm_anon_42",
		"Ünïcode":          "vkfsm_n_code_42",
		"a123456789012345678901234567890123456789_tail": "vkfsm_a123456789012345678901234567890123456789_42",
	} {
		if got := tableName(owner, 42); got != want {
			t.Errorf("tableName(%q) = %q, want %q", owner, got, want)
		}
		if m := tableLine.FindStringSubmatch("table inet " + tableName(owner, 42)); m == nil || m[3] != "42" {
			t.Errorf("SweepStale would not parse the pid of %q: %v", tableName(owner, 42), m)
		}
	}
}

// countDrops counts drop verdicts in nft's listing of a table.
func countDrops(listing string) int {
	n := 0
	for i := 0; i+4 <= len(listing); i++ {
		if listing[i:i+4] == "drop" {
			n++
		}
	}
	return n
}

// DropEndpoints is one way: what a sends to b is lost, what b sends to a arrives (datagrams,
// so that each direction is seen on its own; a TCP connection needs both).
func TestDropEndpointsDropsOneWayOnly(t *testing.T) {
	tb := newTable(t, t.Name())
	const a, b = "127.251.5.1", "127.251.5.2"
	arrives := func(from, to string) bool {
		t.Helper()
		ln, err := net.ListenPacket("udp", net.JoinHostPort(to, "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = ln.Close() }()
		c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(from)}, ln.LocalAddr().(*net.UDPAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		// A datagram the output hook drops fails its write with EPERM: it did not arrive.
		if _, err := c.Write([]byte("x")); err != nil {
			return false
		}
		_ = ln.SetReadDeadline(time.Now().Add(blockedAfter))
		_, _, err = ln.ReadFrom(make([]byte, 8))
		return err == nil
	}
	if !arrives(a, b) || !arrives(b, a) {
		t.Fatal("no datagram arrives before the fault")
	}
	if err := tb.DropEndpoints(Endpoint{Addr: netip.MustParseAddr(a)}, Endpoint{Addr: netip.MustParseAddr(b)}); err != nil {
		t.Fatal(err)
	}
	if arrives(a, b) {
		t.Error("a -> b arrived across the drop")
	}
	if !arrives(b, a) {
		t.Error("b -> a was dropped: the drop must be one way")
	}
	if err := tb.Heal(); err != nil {
		t.Fatal(err)
	}
	if !arrives(a, b) {
		t.Error("a -> b still dropped after Heal")
	}
}
