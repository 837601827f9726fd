package machine

import (
	"fmt"
	"strings"
	"testing"
)

// clusterShard builds shard s of a converged cluster: ordinal 0 its primary serving slots,
// ordinal 1 its replica, both joined and seeing every slot.
func clusterShard(s int, slots ...SlotRange) []Node {
	p := node(0, RolePrimary, fmt.Sprintf("h%d", s), 14)
	r := node(1, RoleReplica, fmt.Sprintf("h%d", s), 14)
	for _, n := range []*Node{&p, &r} {
		n.Name, n.Shard = fmt.Sprintf("s%d-%d", s, n.Ordinal), s
		n.Pod.IP = fmt.Sprintf("10.0.%d.%d", s, n.Ordinal+1)
		n.Valkey.RunID = "run-" + n.Name
		n.Valkey.Joined, n.Valkey.SlotsSeen, n.Valkey.ClusterOK = true, NumSlots, true
	}
	// A cluster replica serves reads (its client user is on): writes are not fenced on it.
	p.Valkey.WritesFenced, p.Valkey.SyncFenced, r.Valkey.WritesFenced = false, false, false
	// Each primary on its own config epoch, as Valkey leaves them once collisions are parted.
	p.Valkey.Slots, p.Valkey.ConfigEpoch = slots, uint64(s+1)
	r.Valkey.PrimaryHost, r.Valkey.LinkUp = p.Pod.IP, true
	return []Node{p, r}
}

// reshardingTo is the persisted state of a resharding towards target shards, with shards
// recorded shards led by ordinal 0.
func reshardingTo(target, shards int) Persisted {
	p := Persisted{State: Resharding, Seq: 2, Since: at(0), PodsPerShard: 2, Op: Operation{Reshard: Reshard{Shards: target}}}
	for s := 0; s < shards; s++ {
		p.Shards = append(p.Shards, ShardRecord{Primary: fmt.Sprintf("s%d-0", s), RunID: fmt.Sprintf("run-s%d-0", s), History: History{ID: fmt.Sprintf("h%d", s)}, Epoch: 1})
	}
	return p
}

// movedSlots sums the slots of the migrate-slots actions and checks each goes to shard to.
func movedSlots(t *testing.T, d Decision) (int, []string) {
	t.Helper()
	total := 0
	var got []string
	for _, a := range d.Actions {
		if m, ok := a.(MigrateSlots); ok {
			total += m.Slots.End - m.Slots.Start + 1
			got = append(got, fmt.Sprintf("%d-%d:%d->%d", m.Slots.Start, m.Slots.End, m.From, m.To))
		}
	}
	return total, got
}

// TestReshardingMovesAQuarterOfTheSlotsNotHalf: 3 → 4 shards moves one range from each of the
// three shards into the new one, 4096 slots in all, all three at once (they involve different
// sources); re-laying contiguous ranges would move 8191 slots, half the keys. Back to 3 shards,
// the same ranges come home and the layout is contiguous again.
func TestReshardingMovesAQuarterOfTheSlotsNotHalf(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 4
	three := SlotPlan(3)
	nodes := append(append(append(clusterShard(0, three[0]), clusterShard(1, three[1])...), clusterShard(2, three[2])...), clusterShard(3)...)
	// A node says cluster_state fail for a moment after it starts and refuses MIGRATE
	// (CLUSTERDOWN): nothing moves into it before it says ok.
	nodes[6].Valkey.ClusterOK = false
	d := Decide(reshardingTo(4, 4), obsAt(1, spec, nodes...))
	if _, got := movedSlots(t, d); len(got) > 0 || (d.Waiting.Kind != WaitClusterStateFail || d.Waiting.Node != "s3-0") {
		t.Fatalf("moves %v into a node that says cluster_state fail (waiting %q)", got, d.Waiting)
	}
	nodes[6].Valkey.ClusterOK = true
	d = Decide(reshardingTo(4, 4), obsAt(1, spec, nodes...))
	total, got := movedSlots(t, d)
	want := []string{"4096-5460:0->3", "9557-10921:1->3", "15018-16383:2->3"}
	if total != NumSlots/4 || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("3 -> 4 shards moves %d slots %v, want %v (4096 slots)", total, got, want)
	}

	spec.Shards = 3
	nodes = append(append(append(clusterShard(0, SlotRange{0, 4095}), clusterShard(1, SlotRange{5461, 9556})...),
		clusterShard(2, SlotRange{10922, 15017})...), clusterShard(3, SlotRange{4096, 5460}, SlotRange{9557, 10921}, SlotRange{15018, 16383})...)
	obs := obsAt(2, spec, nodes...)
	obs.Objects.Shards = 4 // shard 3's pods stay until its nodes left the bus
	d = Decide(reshardingTo(3, 4), obs)
	total, got = movedSlots(t, d)
	want = []string{"4096-5460:3->0", "9557-10921:3->1", "15018-16383:3->2"}
	if total != NumSlots/4 || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("4 -> 3 shards moves %d slots %v, want %v", total, got, want)
	}
	if rm := actionsOf(d, "remove-node"); len(rm) > 0 {
		t.Fatalf("removes %v before shard 3 has given its slots away", rm)
	}
}

// TestAReshardingDecidedAgainMidwayIsTheRestOfTheFirstPlan: after one of the three moves of
// 3 → 4 completed (and half of another), deciding again plans exactly what was left.
func TestAReshardingDecidedAgainMidwayIsTheRestOfTheFirstPlan(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 4
	nodes := append(append(append(clusterShard(0, SlotRange{0, 4095}), clusterShard(1, SlotRange{5461, 10000})...),
		clusterShard(2, SlotRange{10922, 16383})...), clusterShard(3, SlotRange{4096, 5460}, SlotRange{10001, 10921})...)
	d := Decide(reshardingTo(4, 4), obsAt(1, spec, nodes...))
	total, got := movedSlots(t, d)
	want := []string{"9557-10000:1->3", "15018-16383:2->3"}
	if strings.Join(got, " ") != strings.Join(want, " ") || total != 444+1366 {
		t.Fatalf("midway, moves %v (%d slots), want %v", got, total, want)
	}
}

// TestAShardThatLeftTheBusIsNotAskedBackIn: 4 → 3 shards, shard 3 gave its slots away and its
// nodes left the cluster bus (remove-node reset them: empty primaries that know nobody). The
// machine asks for three shards' objects (its StatefulSet and claims go) and does not add
// those nodes back to the cluster.
func TestAShardThatLeftTheBusIsNotAskedBackIn(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 3
	plan := SlotPlan(3)
	gone := clusterShard(3)
	for i := range gone {
		gone[i].Valkey = Valkey{RunID: gone[i].Valkey.RunID, Role: RolePrimary, SecondOffset: -1, WritesFenced: true, SyncFenced: true}
	}
	nodes := append(append(append(clusterShard(0, plan[0]), clusterShard(1, plan[1])...), clusterShard(2, plan[2])...), gone...)
	obs := obsAt(2, spec, nodes...)
	obs.Objects.Shards = 4
	d := Decide(reshardingTo(3, 4), obs)
	if d.Transition == nil || d.Transition.Event != EventShardRemoved || len(d.Next.Shards) != 3 {
		t.Fatalf("shard 3's record is kept while its pods are about to go (their loss would read as a failover): %+v", d.Transition)
	}
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "shards=3") {
		t.Fatalf("ensure-objects %v, want shards=3 (actions %v, waiting %q)", got, d.Actions, d.Waiting)
	}
	for _, a := range d.Actions {
		if Involved(a) != nil && strings.HasPrefix(Involved(a)[0], "s3-") {
			t.Fatalf("%s: a node of the removed shard is acted on", a)
		}
	}
	// Its record forgotten and its StatefulSet deleted, its pods terminate (they stop
	// answering): the machine must not ask for shard 3's objects again.
	obs = obsAt(3, spec, append(nodes[:6:6], unreachable(gone[0], 1), unreachable(gone[1], 1))...)
	obs.Objects.Shards = 3
	d = Decide(d.Next, obs)
	if got := actionsOf(d, "ensure-objects"); len(got) > 0 {
		t.Fatalf("asks for %v while the removed shard's pods terminate: it would come back", got)
	}
	// Once its pods are gone, the resharding completes with three shards recorded.
	obs = obsAt(3, spec, nodes[:6]...)
	d = Decide(reshardingTo(3, 4), obs)
	if d.Transition == nil || d.Next.State != Steady || len(d.Next.Shards) != 3 {
		t.Fatalf("no reshard-complete with 3 shards: %+v, waiting %q", d.Transition, d.Waiting)
	}
}

// TestAShardHalfOffTheBusHasItsOtherNodesRemoved: one node of the shard being removed left the
// bus, the other's remove-node failed; the next decision removes the other, it does not wait for
// the first to be joined again.
func TestAShardHalfOffTheBusHasItsOtherNodesRemoved(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 3
	plan := SlotPlan(3)
	gone := clusterShard(3)
	gone[0].Valkey = Valkey{RunID: gone[0].Valkey.RunID, Role: RolePrimary, SecondOffset: -1, WritesFenced: true, SyncFenced: true}
	nodes := append(append(append(clusterShard(0, plan[0]), clusterShard(1, plan[1])...), clusterShard(2, plan[2])...), gone...)
	obs := obsAt(2, spec, nodes...)
	obs.Objects.Shards = 4
	d := Decide(reshardingTo(3, 4), obs)
	if got := actionsOf(d, "remove-node"); len(got) != 1 || got[0] != "remove-node s3-1" {
		t.Fatalf("remove-node %v, want s3-1 (actions %v, waiting %q)", got, d.Actions, d.Waiting)
	}
}

// TestAShardWhosePrimaryWasForgottenButNotResetIsNotRemoved: 4 → 3 shards, shard 3's replica
// left the bus, but its primary's remove-node failed after every other node forgot it (so no
// node links to it) and before it drained its clients and reset itself: it still knows the
// cluster. Its shard is not taken for gone (its pods would be deleted under clients still sent
// there): the primary's remove-node is asked again (found on real Valkey 9.1, where the
// replica's "Can't forget my master!" failed it).
func TestAShardWhosePrimaryWasForgottenButNotResetIsNotRemoved(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 3
	plan := SlotPlan(3)
	gone := clusterShard(3)
	for i := range gone {
		gone[i].Valkey = Valkey{RunID: gone[i].Valkey.RunID, Role: RolePrimary, SecondOffset: -1, WritesFenced: true, SyncFenced: true}
	}
	nodes := append(append(append(clusterShard(0, plan[0]), clusterShard(1, plan[1])...), clusterShard(2, plan[2])...), gone...)
	// s3-0: unlinked (nobody knows it) but not reset: its view still has the others.
	for _, n := range nodes[:6] {
		nodes[6].Valkey.Known = append(nodes[6].Valkey.Known, KnownNode{ID: "id-" + n.Name, IP: n.Pod.IP, Slots: len(n.Valkey.Slots)})
	}
	obs := obsAt(2, spec, nodes...)
	obs.Objects.Shards = 4
	d := Decide(reshardingTo(3, 4), obs)
	if d.Transition != nil && d.Transition.Event == EventShardRemoved {
		t.Fatalf("shard 3 taken for removed while s3-0 still knows the cluster: %+v", d.Transition)
	}
	if got := actionsOf(d, "remove-node"); len(got) != 1 || got[0] != "remove-node s3-0" {
		t.Fatalf("remove-node %v, want s3-0 again (actions %v, waiting %q)", got, d.Actions, d.Waiting)
	}
}

// TestAShardIsRemovedOnlyOnceEveryViewGaveItsSlotsAway: 4 → 3 shards, shard 3's slots moved
// home, but shard 1's replica has not heard it yet (its view still gives shard 3's primary
// slots). Forgetting that primary now would unassign those slots in the replica's view
// (CLUSTERDOWN Hash slot not served), so the machine waits; once the view caught up, it removes
// shard 3's nodes.
func TestAShardIsRemovedOnlyOnceEveryViewGaveItsSlotsAway(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 3
	plan := SlotPlan(3)
	nodes := append(append(append(clusterShard(0, plan[0]), clusterShard(1, plan[1])...), clusterShard(2, plan[2])...), clusterShard(3)...)
	for i := range nodes {
		nodes[i].Valkey.NodeID = "id-" + nodes[i].Name
	}
	stale := &nodes[3] // s1-1
	stale.Valkey.Known = []KnownNode{{ID: "id-s3-0", IP: nodes[6].Pod.IP, Slots: 1365, Ranges: []SlotRange{{4096, 5460}}, Connected: true}}
	obs := obsAt(2, spec, nodes...)
	obs.Objects.Shards = 4
	d := Decide(reshardingTo(3, 4), obs)
	if rm := actionsOf(d, "remove-node"); len(rm) > 0 || d.Waiting.Kind != WaitStaleSlotViews || !strings.Contains(d.Waiting.Detail, "s1-1") || !strings.Contains(d.Waiting.Detail, "s3-0") {
		t.Fatalf("removes %v while s1-1's view still gives s3-0 slots (waiting %q)", rm, d.Waiting)
	}
	stale.Valkey.Known[0].Slots, stale.Valkey.Known[0].Ranges = 0, nil
	obs = obsAt(2, spec, nodes...)
	obs.Objects.Shards = 4
	d = Decide(reshardingTo(3, 4), obs)
	if rm := actionsOf(d, "remove-node"); strings.Join(rm, " ") != "remove-node s3-0 remove-node s3-1" {
		t.Fatalf("remove-node %v once every view caught up, want s3-0 and s3-1 (waiting %q)", rm, d.Waiting)
	}
}

// TestASlotLeftOpenIsFinishedWhereItWasGoingThenMovedHome: Steady, 3 balanced shards, but slot
// 100 is open between shard 0 (migrating) and shard 1 (importing), as a classic migration of an
// abandoned plan leaves it. The machine reshards: it finishes slot 100 towards shard 1 first
// (some of its keys may be there already), and only then does the plan bring it home.
func TestASlotLeftOpenIsFinishedWhereItWasGoingThenMovedHome(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 3
	plan := SlotPlan(3)
	nodes := append(append(clusterShard(0, plan[0]), clusterShard(1, plan[1])...), clusterShard(2, plan[2])...)
	nodes[0].Valkey.OpenSlots = []OpenSlot{{Slot: 100, Peer: nodes[2].Pod.IP}, {Slot: 101, Peer: nodes[2].Pod.IP}}
	nodes[2].Valkey.OpenSlots = []OpenSlot{{Slot: 100, Peer: nodes[0].Pod.IP, Importing: true}, {Slot: 101, Peer: nodes[0].Pod.IP, Importing: true}}
	steady := reshardingTo(0, 3)
	steady.State, steady.Op = Steady, Operation{}
	d := Decide(steady, obsAt(1, spec, nodes...))
	if d.Transition == nil || d.Transition.To != Resharding || d.Transition.Why != (Reason{Kind: ReasonReshard, Shards: 3, SpecShards: 3, OpenSlots: 1}) {
		t.Fatalf("no resharding for the open slot: %+v, waiting %q", d.Transition, d.Waiting)
	}
	if _, got := movedSlots(t, d); strings.Join(got, " ") != "100-101:0->1" {
		t.Fatalf("moves %v, want slots 100-101 finished towards shard 1, in one move", got)
	}
	// Finished: shard 1 serves slots 100-101, nothing is open; the plan moves them home.
	nodes[0].Valkey.OpenSlots, nodes[2].Valkey.OpenSlots = nil, nil
	nodes[0].Valkey.Slots = []SlotRange{{0, 99}, {102, plan[0].End}}
	nodes[2].Valkey.Slots = []SlotRange{{100, 101}, plan[1]}
	d = Decide(d.Next, obsAt(2, spec, nodes...))
	if _, got := movedSlots(t, d); strings.Join(got, " ") != "100-101:1->0" {
		t.Fatalf("moves %v, want slots 100-101 back to shard 0", got)
	}
}

// TestASlotOpenTowardsAStrangerIsNamedInSteady: Steady, 3 balanced shards, slot 100 migrating
// towards an address no pod has (a hand-run migration to a node outside the operator). The
// machine must not touch it (it cannot tell where the keys are) and must not reshard for it,
// but it says so while Steady, not only once a resharding starts.
func TestASlotOpenTowardsAStrangerIsNamedInSteady(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 3
	plan := SlotPlan(3)
	nodes := append(append(clusterShard(0, plan[0]), clusterShard(1, plan[1])...), clusterShard(2, plan[2])...)
	nodes[0].Valkey.OpenSlots = []OpenSlot{{Slot: 100, Peer: "127.0.0.250"}}
	steady := reshardingTo(0, 3)
	steady.State, steady.Op = Steady, Operation{}
	d := Decide(steady, obsAt(1, spec, nodes...))
	if d.Transition != nil {
		t.Fatalf("transition %+v for a slot open towards a stranger, want none", d.Transition)
	}
	if len(d.Actions) != 0 {
		t.Fatalf("actions %v, want none", d.Actions)
	}
	if d.Waiting.Kind != WaitOpenSlotsUnknown || !strings.Contains(d.Waiting.Detail, `slot 100 open on s0-0 towards "127.0.0.250"`) {
		t.Fatalf("waiting %q, want the open slot named", d.Waiting)
	}
}

// TestFreeSlotsAreAssignedWhileEveryNodeSaysClusterFail: shard 1's slots are served by no node
// (a stranded ghost that held them was forgotten), so every node says cluster_state fail. The
// wait for the target to say ok guards migrations (a starting node refuses what MIGRATE writes
// into it); it must not block assigning free slots, which writes nothing and is the only way
// back to ok (the simulator found the resharding waiting for ever).
func TestFreeSlotsAreAssignedWhileEveryNodeSaysClusterFail(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 2
	plan := SlotPlan(2)
	nodes := append(clusterShard(0, plan[0]), clusterShard(1)...)
	for i := range nodes {
		nodes[i].Valkey.ClusterOK = false
	}
	d := Decide(reshardingTo(2, 2), obsAt(1, spec, nodes...))
	want := fmt.Sprintf("assign-slots s1-0 [%v]", plan[1])
	if got := actionsOf(d, "assign-slots"); len(got) != 1 || got[0] != want {
		t.Fatalf("assign-slots %v, want %s (waiting %q)", got, want, d.Waiting)
	}
}
