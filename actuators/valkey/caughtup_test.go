package valkey

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A replica that is linked but behind (here stopped while its primary takes writes) is not
// caught up; once it runs again and applies the stream, it is.
func TestAReplicaBehindItsPrimaryIsNotCaughtUp(t *testing.T) {
	ctx := context.Background()
	l := startLinkedPair(t, "127.78.0.20", "127.78.0.21")
	p, prim, repl := l.p, l.prim, l.repl
	if err := p.CaughtUp(ctx, prim.ip, repl.ip, time.Second); err != nil {
		t.Fatalf("an idle linked replica: %v", err)
	}
	if err := syscall.Kill(repl.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = syscall.Kill(repl.cmd.Process.Pid, syscall.SIGCONT)
		}
	}()
	c := appClient(t, prim)
	for i := 0; i < 100; i++ {
		if err := c.Do(ctx, c.B().Set().Key("k").Value(strings.Repeat("v", i)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	// Asked of a stopped replica, the survey of it times out: a short context.
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	err := p.CaughtUp(short, prim.ip, repl.ip, 300*time.Millisecond)
	cancel()
	if err == nil {
		t.Fatal("a stopped replica behind its primary counts as caught up")
	}
	if err := syscall.Kill(repl.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	if err := p.CaughtUp(ctx, prim.ip, repl.ip, 5*time.Second); err != nil {
		t.Fatalf("the replica running again: %v", err)
	}
}
