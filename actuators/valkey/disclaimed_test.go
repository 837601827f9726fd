package valkey

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestASlotItsApparentOwnerDisclaimsIsTakenByAssign: the state a config-epoch collision leaves
// in the middle of a hand-over (found in CI, a resharding stalled for good): the source gave a
// slot away (SETSLOT NODE target, it no longer serves it), but the target's view gives it back
// to the source, whose last claim carried a newer epoch than the target's. Nobody serves the
// slot and nobody will: the source claims it no more, the target thinks the source does. The
// machine assigns it (no node of its observation serves it); the target takes it with a new
// epoch, because the owner its view names disclaims it and holds no key in it. A slot its owner
// still serves stays refused. A migration checks for the state after each hand-over and
// mends it the same way (slot 70). The oracle is valkey-cli --cluster check.
func TestASlotItsApparentOwnerDisclaimsIsTakenByAssign(t *testing.T) {
	half := machine.NumSlots / 2
	p, a, b := twoNodes(t, "127.78.13", machine.SlotRange{Start: 0, End: half - 1}, machine.SlotRange{Start: half, End: machine.NumSlots - 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bID := myID(t, ctx, p, b)
	// The source's side of a hand-over whose target side was overruled: a gives slot 50 to b,
	// b is never told.
	if err := p.run(ctx, Addr(a.ip), func(ctx context.Context, c vk.Client) error {
		return c.Do(ctx, c.B().Arbitrary("CLUSTER", "SETSLOT", "50", "NODE", bID).Build()).Error()
	}); err != nil {
		t.Fatal(err)
	}
	// Nothing mends it by itself: after a few gossip rounds b still names a.
	time.Sleep(2 * time.Second)
	if owner := ownerIn(t, ctx, p, b, 50); owner != a.ip {
		t.Fatalf("b's view gives slot 50 to %q before the assignment; the test wants the stalled state (a)", owner)
	}

	if err := p.AssignSlots(ctx, b.ip, survey(t, p, b).RunID, []machine.SlotRange{{Start: 60, End: 60}}); err == nil ||
		!strings.Contains(err.Error(), "slots move only by migration") {
		t.Fatalf("assigning b slot 60, which a serves, must be refused, got %v", err)
	}
	if err := p.AssignSlots(ctx, b.ip, survey(t, p, b).RunID, []machine.SlotRange{{Start: 50, End: 50}}); err != nil {
		t.Fatalf("assigning b slot 50, which a disclaims: %v", err)
	}
	// The migration's own check after a hand-over mends the same state at once.
	if err := p.run(ctx, Addr(a.ip), func(ctx context.Context, c vk.Client) error {
		return c.Do(ctx, c.B().Arbitrary("CLUSTER", "SETSLOT", "70", "NODE", bID).Build()).Error()
	}); err != nil {
		t.Fatal(err)
	}
	if owner := ownerIn(t, ctx, p, b, 70); owner != a.ip {
		t.Fatalf("b's view gives slot 70 to %q; the test wants the stalled state (a)", owner)
	}
	if err := p.keepHandedOver(ctx, a.ip, b.ip, []int{70}); err != nil {
		t.Fatalf("keeping slot 70 handed over: %v", err)
	}
	if owner := ownerIn(t, ctx, p, b, 70); owner != b.ip {
		t.Fatalf("after the hand-over's check b's view gives slot 70 to %q, not b", owner)
	}
	for _, s := range []*server{a, b} { // valkey-cli logs in as the application
		if err := p.OpenWrites(ctx, s.ip, survey(t, p, s).RunID); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, whole := cliClusterCheck(a.ip)
		if whole &&
			ownerIn(t, ctx, p, a, 50) == b.ip && ownerIn(t, ctx, p, b, 50) == b.ip && ownerIn(t, ctx, p, a, 70) == b.ip && ownerIn(t, ctx, p, a, 60) == a.ip {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the assignment the cluster is not whole with slot 50 on b (a: %s, b: %s):\n%s",
				ownerIn(t, ctx, p, a, 50), ownerIn(t, ctx, p, b, 50), out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// twoNodes starts two cluster nodes at subnet.1 and subnet.2, meets them, gives them aSlots
// and bSlots (an empty range: none) and waits until both see them served.
func twoNodes(t *testing.T, subnet string, aSlots, bSlots machine.SlotRange) (*Pool, *server, *server) {
	t.Helper()
	p := newTestPool(t)
	a, b := startClusterServer(t, subnet+".1", ""), startClusterServer(t, subnet+".2", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Meet(ctx, b.ip, survey(t, p, b).RunID, a.ip); err != nil {
		t.Fatal(err)
	}
	served := 0
	for _, n := range []struct {
		s *server
		r machine.SlotRange
	}{{a, aSlots}, {b, bSlots}} {
		if n.r.End < n.r.Start {
			continue
		}
		served += n.r.End - n.r.Start + 1
		if err := p.AssignSlots(ctx, n.s.ip, survey(t, p, n.s).RunID, []machine.SlotRange{n.r}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both nodes see their slots served", func() bool {
		for _, s := range []*server{a, b} {
			if v, err := p.Survey(ctx, s.ip); err != nil || v.SlotsSeen != served {
				return false
			}
		}
		return true
	})
	return p, a, b
}

// myID is the node's cluster ID (CLUSTER MYID).
func myID(t testing.TB, ctx context.Context, p *Pool, s *server) string {
	t.Helper()
	v, err := p.ClusterNodes(ctx, s.ip)
	if err != nil {
		t.Fatal(err)
	}
	me, ok := v.Myself()
	if !ok {
		t.Fatalf("%s does not list itself", s.ip)
	}
	return me.ID
}

// ownerIn is the IP of the node that serves slot as s sees it ("" for none).
func ownerIn(t testing.TB, ctx context.Context, p *Pool, s *server, slot int) string {
	t.Helper()
	v, err := p.ClusterNodes(ctx, s.ip)
	if err != nil {
		t.Fatal(fmt.Errorf("CLUSTER NODES of %s: %w", s.ip, err))
	}
	o, _ := v.OwnerOf(slot)
	return o.IP
}
