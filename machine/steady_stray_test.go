package machine

import (
	"strings"
	"testing"
)

// strayShard is one cluster shard in Steady whose recorded primary s0-0 serves no slots while
// s0-1, restarted from nodes.conf, still serves them: s0-0 came back after a takeover by s0-1
// and learnt of the newer claim, then s0-1 restarted empty, and the failover elected s0-0 for
// its data (the simulator's schedule).
func strayShard(keys int64) (Persisted, Observation) {
	spec := testSpec(1)
	spec.Mode = ModeCluster
	prim := node(0, RolePrimary, "h1", 5)
	prim.Valkey.WritesFenced, prim.Valkey.SyncFenced = false, false
	stray := node(1, RolePrimary, "h-new", 0)
	stray.Valkey.Keys = keys
	stray.Valkey.WritesFenced, stray.Valkey.SyncFenced = true, true
	stray.Valkey.Slots = []SlotRange{{Start: 0, End: NumSlots - 1}}
	for _, n := range []*Node{&prim, &stray} {
		n.Valkey.Joined = true
	}
	return recordedAt(0, 2), obsAt(5, spec, prim, stray)
}

// TestAnEmptyStrayOwnerGivesItsSlotsToThePrimary: replica-of s0-1 would be refused for ever
// (CLUSTER REPLICATE refuses a node that serves slots); the empty stray's slots move to the
// recorded primary by a migration within the shard instead (never freed: see strayOwner).
func TestAnEmptyStrayOwnerGivesItsSlotsToThePrimary(t *testing.T) {
	p, obs := strayShard(0)
	d := Decide(p, obs)
	if got := actionsOf(d, "replica-of"); len(got) != 0 {
		t.Fatalf("replica-of %v for a node that serves slots", got)
	}
	if got := actionsOf(d, "migrate-slots"); len(got) != 1 || got[0] != "migrate-slots 0-16383 shard 0 (s0-1) -> shard 0 (s0-0)" {
		t.Fatalf("migrate-slots %v, want s0-1's slots to s0-0 (waiting %q)", got, d.Waiting)
	}
}

// TestAStrayOwnerWithKeysIsLeftToTheUser: the same, but s0-1 holds keys: the operator never
// empties a node that serves slots; it waits and says how to go on.
func TestAStrayOwnerWithKeysIsLeftToTheUser(t *testing.T) {
	p, obs := strayShard(42)
	d := Decide(p, obs)
	if len(actionsOf(d, "remove-node"))+len(actionsOf(d, "replica-of")) != 0 {
		t.Fatalf("acted on a stray that holds keys: %v", d.Actions)
	}
	if !strings.Contains(d.Waiting, "s0-1 serves the shard's slots and holds 42 key(s)") {
		t.Fatalf("waiting %q, want the stray named with its keys", d.Waiting)
	}
}

// TestAPartlyMovedStrayGivesTheRestToThePrimary: the stray's move was cut short (several ranges,
// an operator crash, a budget, a job still running on 9.x): s0-0 serves part of the shard's slots,
// the empty s0-1 the rest. Gossip never takes from a node slots nobody else claims: waiting for it
// never ended (found by a review); the rest moves to s0-0 like the first part.
func TestAPartlyMovedStrayGivesTheRestToThePrimary(t *testing.T) {
	p, obs := strayShard(0)
	obs.Nodes[0].Valkey.Slots = []SlotRange{{Start: 0, End: 4095}}
	obs.Nodes[1].Valkey.Slots = []SlotRange{{Start: 4096, End: NumSlots - 1}}
	d := Decide(p, obs)
	if got := actionsOf(d, "migrate-slots"); len(got) != 1 || got[0] != "migrate-slots 4096-16383 shard 0 (s0-1) -> shard 0 (s0-0)" {
		t.Fatalf("migrate-slots %v (waiting %q), want the rest of s0-1's slots to s0-0", got, d.Waiting)
	}
}
