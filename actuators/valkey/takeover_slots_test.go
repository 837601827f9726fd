package valkey

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestTakeSlotsOverGivesTheSlotsToTheRecordedPrimary: the machine's TakeSlotsOver, for a
// deposed node (a) that still serves the shard's slots with keys while the recorded primary
// (b) serves none. b claims them with a newer epoch; a, hearing it, stops serving them. An
// action for another process of a is refused and changes nothing. The oracle is valkey-cli
// --cluster check (every slot covered, every node agreeing) and both nodes' views.
func TestTakeSlotsOverGivesTheSlotsToTheRecordedPrimary(t *testing.T) {
	all := machine.SlotRange{Start: 0, End: machine.NumSlots - 1}
	p, a, b := twoNodes(t, "127.78.21", all, machine.SlotRange{Start: 1, End: 0})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.OpenWrites(ctx, a.ip, survey(t, p, a).RunID); err != nil {
		t.Fatal(err)
	}
	eventually(t, a.ip+" says cluster_state ok", func() bool {
		v, err := p.Survey(ctx, a.ip)
		return err == nil && v.ClusterOK
	})
	cl, err := vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(a.ip)}, Password: testPasswords.Client, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 20; k++ {
		if err := cl.Do(ctx, cl.B().Set().Key("off-the-line:"+strconv.Itoa(k)).Value("x").Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	if v := survey(t, p, a); v.Keys != 20 {
		t.Fatalf("a holds %d keys, want 20", v.Keys)
	}
	slots := []machine.SlotRange{all}
	err = p.TakeSlotsOver(ctx, b.ip, survey(t, p, b).RunID, a.ip, "not-"+survey(t, p, a).RunID, slots)
	if !errors.Is(err, ErrOtherProcess) {
		t.Fatalf("taking the slots from another process of a must be refused, got %v", err)
	}
	if owner := ownerIn(t, ctx, p, b, 0); owner != a.ip {
		t.Fatalf("after the refused action b's view gives slot 0 to %q, want a", owner)
	}
	if err := p.TakeSlotsOver(ctx, b.ip, survey(t, p, b).RunID, a.ip, survey(t, p, a).RunID, slots); err != nil {
		t.Fatal(err)
	}
	if err := p.OpenWrites(ctx, b.ip, survey(t, p, b).RunID); err != nil { // valkey-cli logs in as the application
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, whole := cliClusterCheck(b.ip)
		va, errA := p.Survey(ctx, a.ip)
		vb, errB := p.Survey(ctx, b.ip)
		if errA == nil && errB == nil && len(va.Slots) == 0 && machine.SlotCount(vb.Slots) == machine.NumSlots &&
			ownerIn(t, ctx, p, a, 0) == b.ip && ownerIn(t, ctx, p, a, machine.NumSlots-1) == b.ip && whole {
			t.Logf("a after the take-over: role %s, %d keys, following %q", va.Role, va.Keys, va.PrimaryHost)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("b does not serve every slot in both views (a serves %v, b %d slots):\n%s", va.Slots, machine.SlotCount(vb.Slots), out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
