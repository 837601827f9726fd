package machine

import "testing"

// tiedShard is one cluster shard with persistence in Steady: the recorded primary s0-0, back
// from its append-only file under the recorded history at offset 0, serves no slots; s0-1,
// restarted from its own file (a fresh ID nobody can place), serves them with a newer claim.
// Only key counts compare the two.
func tiedShard(primKeys, ownerKeys int64) (Persisted, Observation) {
	spec := testSpec(1)
	spec.Mode, spec.Persistence = ModeCluster, true
	prim := node(0, RolePrimary, "h1", 0)
	prim.Valkey.Keys = primKeys
	prim.Valkey.WritesFenced, prim.Valkey.SyncFenced = false, false
	prim.Valkey.ConfigEpoch = 1
	owner := node(1, RolePrimary, "h-own", 0)
	owner.Valkey.Keys = ownerKeys
	owner.Valkey.WritesFenced, owner.Valkey.SyncFenced = true, true
	owner.Valkey.Slots = []SlotRange{{Start: 0, End: NumSlots - 1}}
	owner.Valkey.ConfigEpoch = 3
	for _, n := range []*Node{&prim, &owner} {
		n.Valkey.Joined = true
	}
	return recordedAt(0, 2), obsAt(5, spec, prim, owner)
}

// TestATiedSlotOwnerReplacesThePrimaryServingNone: at equal key counts the recorded primary
// without slots is lost and the failover starts; elected, it would wait for good for a user
// to empty the node serving the slots.
func TestATiedSlotOwnerReplacesThePrimaryServingNone(t *testing.T) {
	p, obs := tiedShard(3, 3)
	d := Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost || d.Transition.Why.Fault != (PrimaryFault{Kind: FaultServesNoSlots, Primary: "s0-0", Server: "s0-1"}) {
		t.Fatalf("want primary-lost for s0-0 with s0-1 serving the slots, got %s", d)
	}
}

// TestNoTieNoReplacement: where key counts say one holds more, it is no tie: the slot owner
// holding fewer keys is not preferred to the recorded primary, and one holding more is left to
// the user (it may hold writes off the line), said why.
func TestNoTieNoReplacement(t *testing.T) {
	for _, ownerKeys := range []int64{2, 4} {
		p, obs := tiedShard(3, ownerKeys)
		d := Decide(p, obs)
		if d.Transition != nil {
			t.Fatalf("owner with %d keys against 3: transition %s, want none", ownerKeys, d.Transition.Event)
		}
		if d.Waiting.Kind != WaitStrayHoldsKeys {
			t.Fatalf("owner with %d keys against 3: waiting %q, want the stray left to the user", ownerKeys, d.Waiting)
		}
	}
}

// TestTheBootstrapPrefersTheSlotOwnerInATie: a re-created cluster's nodes with the same data
// (equal digests): the one serving the shard's slots is elected, not the lowest ordinal.
func TestTheBootstrapPrefersTheSlotOwnerInATie(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Persistence = ModeCluster, true
	var nodes []Node
	for ord := 0; ord < 2; ord++ {
		n := node(ord, RolePrimary, "h-"+string(rune('a'+ord)), 0)
		n.Valkey.Keys, n.Valkey.Digest = 1, "debug:1"
		n.Valkey.WritesFenced, n.Valkey.SyncFenced = true, true
		n.Pod.VolumeFromBefore = true
		nodes = append(nodes, n)
	}
	nodes[1].Valkey.Slots = []SlotRange{{Start: 0, End: NumSlots - 1}}
	nodes[1].Valkey.ConfigEpoch = 2
	d := Decide(Persisted{State: Bootstrapping}, obsAt(5, spec, nodes...))
	if d.Transition == nil || d.Transition.Event != EventBootstrapElected || d.Transition.Why.Node != "s0-1" {
		t.Fatalf("want s0-1, which serves the slots, elected, got %s", d)
	}
}
