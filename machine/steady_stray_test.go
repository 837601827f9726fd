package machine

import "testing"

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
	prim.Valkey.ConfigEpoch, stray.Valkey.ConfigEpoch = 1, 2
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
	if w := d.Waiting; w.Kind != WaitStrayHoldsKeys || w.Node != "s0-1" || w.N != 42 {
		t.Fatalf("waiting %q, want the stray named with its keys", d.Waiting)
	}
}

// TestADeposedStrayWithKeysLosesItsSlotsToThePrimary: the stray holding keys is the pod the
// election deposed, recorded as resyncing: its data was weighed and s0-0's chosen, and its
// resync replaces it anyway. s0-0 takes the slots over with a newer epoch (found by the
// simulator: the shard waited for good). Not yet recorded as resyncing, the same decision
// records it; during a restore, a stray without the restore's data is taken over the same way,
// one holding it is not.
func TestADeposedStrayWithKeysLosesItsSlotsToThePrimary(t *testing.T) {
	p, obs := strayShard(42)
	p.Shards[0].Deposed = []DeposedPod{{Pod: "s0-1", Keys: 5, Left: HistoryLink{ID: "h1", End: 6}, Resyncing: true, ResyncKeys: 42}}
	d := Decide(p, obs)
	if got := actionsOf(d, "take-slots-over"); len(got) != 1 || got[0] != "take-slots-over s0-0 [{0 16383}] from s0-1" {
		t.Fatalf("take-slots-over %v (waiting %q), want s0-1's slots claimed by s0-0", got, d.Waiting)
	}
	if len(actionsOf(d, "replica-of")) != 0 {
		t.Fatalf("replica-of for a node that still serves slots: %v", d.Actions)
	}
	// Not yet recorded as resyncing: the decision records it (deposed-resync) with the take-over.
	p.Shards[0].Deposed[0].Resyncing = false
	if d := Decide(p, obs); d.Transition == nil || d.Transition.Event != EventDeposedResync || len(actionsOf(d, "take-slots-over")) != 1 {
		t.Fatalf("want deposed-resync recorded with the take-over, got %s", d)
	}
	p.Shards[0].Deposed = nil
	p.State, p.Op = Restoring, Operation{Restore: Restore{Request: "restore-1"}}
	obs.Nodes[0].Valkey.Snapshot = "restore-1"
	if got := actionsOf(Decide(p, obs), "take-slots-over"); len(got) != 1 {
		t.Fatalf("take-slots-over %v during a restore, want s0-1's slots claimed by s0-0", got)
	}
	obs.Nodes[1].Valkey.Snapshot = "restore-1"
	if got := actionsOf(Decide(p, obs), "take-slots-over"); len(got) != 0 {
		t.Fatalf("took the slots over from a node holding the restore's data: %v", got)
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

// TestALeavingShardsStrayIsSettledInItsShardFirst: a shrink from 2 shards to 1; in the leaving
// shard 1 the recorded primary s1-0 (elected for its data, 7 keys) serves no slots and an empty
// stray s1-1 serves them. Its slots are shard 1's, not free: they must not be assigned to shard
// 0, which lacks their keys (a review found exactly that); the stray gives them to s1-0 first.
func TestALeavingShardsStrayIsSettledInItsShardFirst(t *testing.T) {
	nodes := append(clusterShard(0, SlotRange{Start: 0, End: 8191}), clusterShard(1)...)
	nodes[2].Valkey.Keys = 7
	nodes[3].Valkey.Role, nodes[3].Valkey.PrimaryHost, nodes[3].Valkey.LinkUp = RolePrimary, "", false
	nodes[3].Valkey.Slots = []SlotRange{{Start: 8192, End: NumSlots - 1}}
	nodes[3].Valkey.WritesFenced, nodes[3].Valkey.SyncFenced = true, true
	nodes = withIDs(nodes)
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 1
	obs := obsAt(1, spec, nodes...)
	obs.Objects.Shards = 2
	d := Decide(reshardingTo(1, 2), obs)
	if got := actionsOf(d, "assign-slots"); len(got) != 0 {
		t.Fatalf("assign-slots %v: shard 1's slots are not free", got)
	}
	if got := actionsOf(d, "migrate-slots"); len(got) != 1 || got[0] != "migrate-slots 8192-16383 shard 1 (s1-1) -> shard 1 (s1-0)" {
		t.Fatalf("migrate-slots %v (waiting %q), want the stray's slots to s1-0 first", got, d.Waiting)
	}
}

// TestAPromotedCandidateWithoutSlotsGivesWayToTheNodeServingThem: in FailingOver the elected
// s0-0 (the old primary, back without slots after s0-1 had taken them over) is promoted; then
// s0-1, the lost primary cut off at the election, answers again serving the shard's slots with
// s0-0's data and no more. s0-0 could only be promoted to serve nothing, and s0-1 refuses to
// follow it: s0-0 is lost as a candidate (it takes no write) and s0-1 elected (found by the
// simulator, regressions/cluster-re-elect-the-node-serving-the-slots.sched, where the shard
// waited for good). Against a node holding more than it, or without slots, the candidate stays.
func TestAPromotedCandidateWithoutSlotsGivesWayToTheNodeServingThem(t *testing.T) {
	spec := testSpec(1)
	spec.Mode = ModeCluster
	cand := node(0, RolePrimary, "h1", 1)
	cand.Valkey.WritesFenced, cand.Valkey.SyncFenced, cand.Valkey.Keys = true, false, 1
	lost := node(1, RolePrimary, "h2", 1)
	lost.Valkey.ReplID2, lost.Valkey.SecondOffset, lost.Valkey.Keys = "h1", 2, 1
	lost.Valkey.WritesFenced, lost.Valkey.SyncFenced = true, true
	lost.Valkey.Slots = []SlotRange{{Start: 0, End: NumSlots - 1}}
	// s0-1's takeover claim is the newest: failover-complete cannot open s0-0 (claims.go).
	cand.Valkey.NodeID, lost.Valkey.NodeID, lost.Valkey.ConfigEpoch = "id-0", "id-1", 3
	for _, n := range []*Node{&cand, &lost} {
		n.Valkey.Joined = true
	}
	p := Persisted{State: FailingOver, Seq: 7, Shards: []ShardRecord{{Primary: "s0-0", RunID: cand.Valkey.RunID, History: History{ID: "h1"}, Epoch: 4}}, PodsPerShard: 2,
		Op: Operation{Election: Election{Shard: 0, Lost: "s0-1", LostRunID: lost.Valkey.RunID, LostHistory: History{ID: "h2", PrevID: "h1", PrevEnd: 2}, Writer: "s0-1", WriterRunID: lost.Valkey.RunID, Candidate: "s0-0", KnownFenced: true, ElectedAt: at(1)}}}
	d := Decide(p, obsAt(5, spec, cand, lost))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost || d.Transition.Why.Fault != (PrimaryFault{Kind: FaultServesNoSlots, Primary: "s0-0", Server: "s0-1"}) {
		t.Fatalf("want primary-lost for s0-0, which serves no slot, got %s", d)
	}
	d = Decide(d.Next, obsAt(6, spec, cand, lost))
	if d.Transition == nil || d.Transition.Event != EventCandidateElected || d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("want s0-1 elected, got %s", d)
	}

	// s0-1 holding less than the promoted s0-0: no change (its slots do not make up for data).
	behind := cand
	behind.Valkey.Offset, behind.Valkey.Keys = 3, 3
	if d := Decide(p, obsAt(5, spec, behind, lost)); d.Transition != nil {
		t.Fatalf("replaced the candidate by a node holding less: %s", d)
	}
	// s0-1 without slots: nothing to gain.
	bare := lost
	bare.Valkey.Slots = nil
	if d := Decide(p, obsAt(5, spec, cand, bare)); d.Transition != nil && d.Transition.Event != EventFailoverComplete {
		t.Fatalf("replaced the candidate by a node that serves no slots either: %s", d)
	}
}

// TestAStrayServingTheSlotsWithThePrimarysDataTakesOver: the same shard, but s0-1's history
// continues s0-0's past everything s0-0 holds. s0-0 serves no slot, so it takes no write, and
// s0-1 will not follow it: a failover to s0-1 loses nothing, where waiting would wait for a user
// (found by the simulator, regressions/cluster-stray-with-the-data-takes-over.sched).
func TestAStrayServingTheSlotsWithThePrimarysDataTakesOver(t *testing.T) {
	p, obs := strayShard(42)
	obs.Nodes[1].Valkey.ReplID2, obs.Nodes[1].Valkey.SecondOffset, obs.Nodes[1].Valkey.Offset = "h1", 6, 5
	d := Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost || d.Transition.Why.Fault != (PrimaryFault{Kind: FaultServesNoSlots, Primary: "s0-0", Server: "s0-1"}) {
		t.Fatalf("want primary-lost for s0-0, which serves no slot, got %s", d)
	}
	// The failover does not end as a recovery of s0-0: it still serves nothing.
	d2 := Decide(d.Next, obsAt(6, obs.Spec, obs.Nodes...))
	if d2.Transition != nil && d2.Transition.Event == EventPrimaryRecovered {
		t.Fatalf("s0-0 recovered while it serves no slot: %s", d2)
	}
	// s0-0 importing a slot (a resharding's move cut short): it takes writes under ASKING.
	importing := obs
	importing.Nodes = append([]Node(nil), obs.Nodes...)
	importing.Nodes[0].Valkey.OpenSlots = []OpenSlot{{Slot: 42, Peer: "id-other", Importing: true}}
	if d := Decide(p, importing); d.Transition != nil && d.Transition.Event == EventPrimaryLost {
		t.Fatalf("failed over a primary with an importing slot: %s", d)
	}
	// s0-0 holding a write beyond s0-1's: left to the user, as before.
	obs.Nodes[0].Valkey.Offset = 7
	if d := Decide(p, obs); d.Transition != nil {
		t.Fatalf("failed over to a node holding less: %s", d)
	}
}
