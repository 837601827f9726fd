package reshard

import (
	"bytes"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// Slots that strayed (finished elsewhere by an open migration) go home; status's forms of a
// range (single slots, lists) parse; what is not a range is an error naming the field.
func TestPlanFromStatusSlots(t *testing.T) {
	vc := &v1beta1.ValkeyCluster{Status: v1beta1.ValkeyClusterStatus{Shards: []v1beta1.ShardStatus{
		{Index: 0, Slots: "0-99,102-5460"}, {Index: 1, Slots: "100,101,5461-10921"}, {Index: 2, Slots: "10922-16383"},
	}}}
	plan, err := PlanFor(vc, 3)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := plan.Write(&out); err != nil {
		t.Fatal(err)
	}
	if plan.Slots() != 2 || !strings.Contains(out.String(), "shard 1   shard 0   100-101   2") {
		t.Fatalf("plan moves %d slots:\n%s", plan.Slots(), out.String())
	}
	for _, bad := range []string{"5-1", "x", "0-16384", "-3"} {
		vc.Status.Shards[2].Slots = bad
		if _, err := PlanFor(vc, 3); err == nil || !strings.Contains(err.Error(), "status.shards[2].slots") {
			t.Errorf("slots %q: %v", bad, err)
		}
	}
}
