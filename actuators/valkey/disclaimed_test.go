package valkey

import (
	"context"
	"fmt"
	"strconv"
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
// still serves stays refused. A migration checks for the state after each hand-over, mends it
// the same way (slot 70) and fails, saying the keys are gone (see
// TestATargetOverruledByItsSourceDeletesTheKeys). The oracle is valkey-cli --cluster check.
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
	// It takes the slot back, and fails: whatever keys the target held in the slot, Valkey
	// deleted them when the source's claim overruled it.
	if err := p.keepHandedOver(ctx, a.ip, b.ip, []int{70}); err == nil || !strings.Contains(err.Error(), "Deleting keys in dirty slot") {
		t.Fatalf("keeping slot 70 handed over: %v, want the error that says the keys were deleted", err)
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

// TestATargetOverruledByItsSourceDeletesTheKeys is why the machine moves no slot from a primary
// that shares its config epoch with another (machine/sharedepoch.go), shown on a real pair: the
// keys of a slot migrate from a to b and b takes the slot (SETSLOT NODE, a new epoch); then a
// claims it with a newer epoch (what a source that has not heard of b's claim sends once a
// collision gives it one). b's view gives the slot back to a, and b deletes the keys it just
// received. The hand-over's own check then takes the slot back for b and fails, saying
// the keys are gone; an application's client reads none of them.
func TestATargetOverruledByItsSourceDeletesTheKeys(t *testing.T) {
	half := machine.NumSlots / 2
	p, a, b := twoNodes(t, "127.78.18", machine.SlotRange{Start: 0, End: half - 1}, machine.SlotRange{Start: half, End: machine.NumSlots - 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range []*server{a, b} {
		if err := p.OpenWrites(ctx, s.ip, survey(t, p, s).RunID); err != nil {
			t.Fatal(err)
		}
	}
	admin := func(s *server, args ...string) vk.ValkeyResult {
		t.Helper()
		var res vk.ValkeyResult
		if err := p.run(ctx, Addr(s.ip), func(ctx context.Context, c vk.Client) error {
			res = c.Do(ctx, c.B().Arbitrary(args[0]).Args(args[1:]...).Build())
			return res.Error()
		}); err != nil {
			t.Fatalf("%v on %s: %v", args, s.ip, err)
		}
		return res
	}
	// A node says cluster_state fail for a moment after it starts, and refuses what MIGRATE
	// writes into it.
	eventually(t, "both nodes say cluster_state ok", func() bool { return survey(t, p, a).ClusterOK && survey(t, p, b).ClusterOK })
	app := appClient(t, a)
	// A hash tag that puts every key in one slot of a's.
	tag, slot := "", -1
	for i := 0; slot < 0 || slot >= half; i++ {
		tag = fmt.Sprintf("{t%d}", i)
		n, err := app.Do(ctx, app.B().ClusterKeyslot().Key(tag).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		slot = int(n)
	}
	var keys []string
	for i := 0; i < 10; i++ {
		k := tag + strconv.Itoa(i)
		if err := app.Do(ctx, app.B().Set().Key(k).Value(k).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	aID, bID, s := myID(t, ctx, p, a), myID(t, ctx, p, b), strconv.Itoa(slot)
	admin(b, "CLUSTER", "SETSLOT", s, "IMPORTING", aID)
	admin(a, "CLUSTER", "SETSLOT", s, "MIGRATING", bID)
	admin(a, append([]string{"MIGRATE", b.ip, strconv.Itoa(Port), "", "0", "5000", "AUTH2", UserOperator, testPasswords.Operator, "KEYS"}, keys...)...)
	admin(b, "CLUSTER", "SETSLOT", s, "NODE", bID)
	taken := survey(t, p, b).ConfigEpoch
	eventually(t, "a hears of b's claim", func() bool { return ownerIn(t, ctx, p, a, slot) == b.ip })
	// a claims the slot with a newer epoch, as a source that took one before it heard of b's
	// claim (a collision's) sends it: the race is a matter of milliseconds, so the test gives
	// the claim back to a by hand (SETSLOT NODE a, then BUMPEPOCH); what reaches b is the same.
	admin(a, "CLUSTER", "SETSLOT", s, "NODE", aID)
	if err := p.run(ctx, Addr(a.ip), func(ctx context.Context, c vk.Client) error {
		return doAll(ctx, c, bumpEpoch(c)...)
	}); err != nil {
		t.Fatal(err)
	}
	if newer := survey(t, p, a).ConfigEpoch; newer <= taken {
		t.Fatalf("a's epoch %d is not newer than b's %d: the test wants the source's claim to win", newer, taken)
	}
	var held string
	eventually(t, "b's view gives the slot back to a and b holds none of its keys", func() bool {
		ks, err := admin(b, "CLUSTER", "GETKEYSINSLOT", s, "100").AsStrSlice()
		held = fmt.Sprintf("owner %s, keys %v (%v)", ownerIn(t, ctx, p, b, slot), ks, err)
		return err == nil && len(ks) == 0 && ownerIn(t, ctx, p, b, slot) == a.ip
	}, &held)
	// Now a is told, as the hand-over's second step does: it disclaims the slot.
	admin(a, "CLUSTER", "SETSLOT", s, "NODE", bID)
	if err := p.keepHandedOver(ctx, a.ip, b.ip, []int{slot}); err == nil || !strings.Contains(err.Error(), "Deleting keys in dirty slot") {
		t.Fatalf("the hand-over's check: %v, want the error that says the keys were deleted", err)
	}
	eventually(t, "both views give the slot to b", func() bool {
		return ownerIn(t, ctx, p, a, slot) == b.ip && ownerIn(t, ctx, p, b, slot) == b.ip
	})
	for _, k := range keys {
		if got, err := app.Do(ctx, app.B().Get().Key(k).Build()).ToString(); !vk.IsValkeyNil(err) {
			t.Fatalf("%s reads %q, %v after b was overruled; the test expects Valkey to have deleted it", k, got, err)
		}
	}
}
