package machine

import (
	"fmt"
	"strings"
	"testing"
)

// Two stranded ghosts and one primary without slots holding keys: the slots its keys hash to
// say which ghost's slots are its; keys in both ghosts' slots, or slots not read, wait.
func TestStrandedGhostsGoByTheirKeysSlots(t *testing.T) {
	one, two := SlotPlan(3)[1], SlotPlan(3)[2]
	for _, c := range []struct {
		name     string
		keySlots []SlotRange
		assigned []string
	}{
		{"keys in shard 1's slots", []SlotRange{{Start: one.Start, End: one.Start + 3}, {Start: one.End, End: one.End}}, []string{fmt.Sprintf("assign-slots s1-0 [%v]", one)}},
		{"keys in both ghosts' slots", []SlotRange{{Start: one.Start, End: one.Start}, {Start: two.Start, End: two.Start}}, nil},
		{"key slots not read", nil, nil},
	} {
		nodes := strandedShards(1, 2)
		nodes[2].Valkey.Keys, nodes[2].Valkey.KeySlots = 14, c.keySlots
		p, obs := steadyShards3(nodes)
		d := Decide(p, obs)
		got := actionsOf(d, "assign-slots")
		if fmt.Sprint(got) != fmt.Sprint(c.assigned) {
			t.Errorf("%s: assign-slots %v, want %v (waiting %q)", c.name, got, c.assigned, d.Waiting)
			continue
		}
		forgot := actionsOf(d, "forget-node")
		if c.assigned != nil && (len(forgot) != 1 || !strings.Contains(forgot[0], "old-s1-1")) {
			t.Errorf("%s: forget-node %v, want only old-s1-1, whose slots s1-0 takes", c.name, forgot)
		}
		if c.assigned == nil && (len(forgot) != 0 || d.Waiting.Kind != WaitGhostsServeSlots || !strings.Contains(d.Waiting.Detail, "is not known")) {
			t.Errorf("%s: forget-node %v, waiting %q: want the wait", c.name, forgot, d.Waiting)
		}
	}
}
