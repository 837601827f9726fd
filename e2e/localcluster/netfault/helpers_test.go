package netfault

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Every address of this package's tests is in 127.251.0.0/16, so that other packages' tests
// running at the same time (each with its own range) never see these rules.

// blockedAfter is how long a dial may hang before we call it blocked. Packets on loopback
// arrive in microseconds, so a working dial never comes near it.
const blockedAfter = 300 * time.Millisecond

// newTable opens a table for the test, skips the test with the reason when this machine
// cannot (not root, no nft), and closes the table when the test ends, failed or not.
func newTable(t *testing.T, owner string) *Table {
	t.Helper()
	tb, err := New(owner)
	if errors.Is(err, ErrNotRoot) || errors.Is(err, ErrNoNft) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tb.Close(); err != nil {
			t.Errorf("closing table: %v", err)
		}
	})
	return tb
}

// skipUnlessPrivileged skips tests that call nft directly when New could not.
func skipUnlessPrivileged(t *testing.T) {
	t.Helper()
	if err := preflight(); err != nil {
		t.Skip(err.Error())
	}
}

// server is a TCP listener on one loopback address that greets every connection with its
// address and then echoes.
type server struct {
	addr netip.AddrPort
}

func startServer(t *testing.T, ip string) server {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	conns := make(chan net.Conn, 64)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
			go func() {
				_, _ = io.WriteString(c, ip+"\n")
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		close(conns)
		for c := range conns {
			_ = c.Close()
		}
	})
	return server{addr: netip.MustParseAddrPort(ln.Addr().String())}
}

// dial connects from the local address from ("" = let the kernel choose) to s and reads the
// greeting. It returns nil when that worked, and the error otherwise.
func dial(from string, s server) error {
	d := net.Dialer{Timeout: blockedAfter}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", s.addr.String())
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(blockedAfter))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if want := s.addr.Addr().String() + "\n"; line != want {
		return errors.New("unexpected greeting " + strings.TrimSpace(line))
	}
	return nil
}

// mustReach fails unless from reaches s.
func mustReach(t *testing.T, from string, s server) {
	t.Helper()
	if err := dial(from, s); err != nil {
		t.Errorf("%s -> %s: want a connection, got %v", orKernel(from), s.addr, err)
	}
}

// mustTimeOut fails unless a dial from from to s times out: a partition makes packets
// vanish, it does not refuse them.
func mustTimeOut(t *testing.T, from string, s server) {
	t.Helper()
	err := dial(from, s)
	switch {
	case err == nil:
		t.Errorf("%s -> %s: want a timeout, got a working connection", orKernel(from), s.addr)
	case !isTimeout(err):
		t.Errorf("%s -> %s: want a timeout, got %v", orKernel(from), s.addr, err)
	}
}

// isTimeout tells whether err is a dial or read timeout (and not, say, a refusal or reset).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func orKernel(from string) string {
	if from == "" {
		return "(unbound)"
	}
	return from
}

// tableNames lists the names of all nftables tables.
func tableNames(t *testing.T) []string {
	t.Helper()
	out, err := nftOutput("list", "tables")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			names = append(names, f[2])
		}
	}
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
