package valkey

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A replica sealed while linked keeps its link (a seal only refuses new ones) and is not
// recorded unlinked. Once its primary restarts, the sealed replica cannot link again although
// the primary takes the replication password, and a seal taken then, with no connection, is
// recorded unlinked at a time after the transaction. Unsealed, it links again.
func TestASealedReplicaLinksToNoPrimaryUntilUnsealed(t *testing.T) {
	p := newTestPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prim, r := startServer(t, "127.78.15.1"), startServer(t, "127.78.15.2")
	if err := p.Promote(ctx, prim.ip, survey(t, p, prim).RunID); err != nil {
		t.Fatal(err)
	}
	if err := p.ReplicaOf(ctx, r.ip, survey(t, p, r).RunID, prim.ip, testPasswords.Replication); err != nil {
		t.Fatal(err)
	}
	linked := func() bool { v := survey(t, p, r); return v.PrimaryHost == prim.ip && v.LinkUp }
	eventually(t, "the replica linked", linked)

	before := time.Now().Truncate(time.Millisecond)
	if err := p.Seal(ctx, r.ip, survey(t, p, r).RunID, "clock-a"); err != nil {
		t.Fatal(err)
	}
	v := survey(t, p, r)
	if v.Sealed.At.Before(before) || v.Sealed.Clock != "clock-a" || v.Sealed.Unlinked || !v.LinkUp {
		t.Fatalf("sealed while linked: %+v, link up %v; want a seal at or after %s on clock-a, not unlinked, the link kept", v.Sealed, v.LinkUp, before)
	}

	prim.restart(t) // it starts as a replica of nothing, fenced: promoted, it serves replicas again
	if err := p.Promote(ctx, prim.ip, survey(t, p, prim).RunID); err != nil {
		t.Fatal(err)
	}
	detail := ""
	eventually(t, "a seal taken with no connection recorded unlinked", func() bool {
		start := time.Now().Truncate(time.Millisecond)
		if err := p.Seal(ctx, r.ip, survey(t, p, r).RunID, "clock-a"); err != nil {
			detail = err.Error()
			return false
		}
		s := survey(t, p, r).Sealed
		detail = s.At.String()
		return s.Unlinked && !s.At.Before(start)
	}, &detail)
	time.Sleep(2500 * time.Millisecond) // the replica retries its handshake every second
	if linked() {
		t.Fatal("a sealed replica linked again to a primary that takes the replication password")
	}
	if err := p.Unseal(ctx, r.ip, survey(t, p, r).RunID, testPasswords.Replication); err != nil {
		t.Fatal(err)
	}
	if s := survey(t, p, r).Sealed; !s.At.IsZero() {
		t.Fatalf("unsealed, the survey still reads a seal: %+v", s)
	}
	last := ""
	eventually(t, "the unsealed replica linked again", func() bool {
		v := survey(t, p, r)
		last = fmt.Sprintf("%+v", v)
		return v.PrimaryHost == prim.ip && v.LinkUp
	}, &last)
}

// The seal's text survives the survey's reading: time to the millisecond, the flag and a
// clock with separators of its own; anything else reads as no seal.
func TestASealReadsBackAsWritten(t *testing.T) {
	at := time.UnixMilli(1795750000123).UTC()
	for _, unlinked := range []bool{true, false} {
		got := parseSeal(sealValue(at, unlinked, "operator-0/1;x"))
		if !got.At.Equal(at) || got.Unlinked != unlinked || got.Clock != "operator-0/1;x" {
			t.Fatalf("read back %+v, want %s unlinked=%v clock operator-0/1;x", got, at, unlinked)
		}
	}
	for _, other := range []string{"", testPasswords.Replication, detachedPassword, sealPrefix + "x;1;c", sealPrefix + "12"} {
		if got := parseSeal(other); !got.At.IsZero() {
			t.Fatalf("%q read as a seal: %+v", other, got)
		}
	}
}
