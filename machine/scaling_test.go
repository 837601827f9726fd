package machine

import (
	"reflect"
	"strings"
	"testing"
)

// Scaling: replicas-changed records each requested pod count once; a scale-down never asks
// the objects for fewer pods than the recorded primary's ordinal needs, and hands a primary
// on a removed ordinal over first.

// withObjects sets what the owned objects ask for (obsAt copies the spec).
func withObjects(obs Observation, replicas int) Observation {
	obs.Objects.Replicas = replicas
	return obs
}

// ledBy returns nodes where ordinal prim is the open primary in history h1 and the others
// are its linked replicas, each at the given offset.
func ledBy(prim int, offsets ...int64) []Node {
	ip := func(ord int) string { return node(ord, RoleReplica, "", 0).Pod.IP }
	out := make([]Node, len(offsets))
	for ord, off := range offsets {
		if ord == prim {
			n := node(ord, RolePrimary, "h1", off)
			n.Valkey.WritesFenced, n.Valkey.SyncFenced = false, false
			out[ord] = n
			continue
		}
		n := node(ord, RoleReplica, "h1", off)
		n.Valkey.PrimaryHost, n.Valkey.LinkUp = ip(prim), true
		out[ord] = n
	}
	return out
}

// recordedAt is a converged Steady record led by ordinal prim, with pods per shard.
func recordedAt(prim, pods int) Persisted {
	p := steadyState()
	p.Shards[0].Primary, p.Shards[0].RunID = node(prim, RolePrimary, "", 0).Name, node(prim, RolePrimary, "", 0).Valkey.RunID
	p.PodsPerShard = pods
	return p
}

// shrinks reports whether an action of d asks the objects for fewer than pods pods.
func shrinks(d Decision, pods int) bool {
	for _, a := range d.Actions {
		if e, ok := a.(EnsureObjects); ok && 1+e.Replicas < pods {
			return true
		}
	}
	return false
}

func TestScaleUpRecordsOneTransitionAndEnsuresObjects(t *testing.T) {
	spec := testSpec(3) // 4 pods per shard
	obs := withObjects(obsAt(5, spec, ledBy(0, 5, 5, 5)...), 2)
	d := Decide(recordedAt(0, 3), obs)
	if d.Transition == nil || d.Transition.Event != EventReplicasChanged || d.Transition.From != Steady || d.Transition.To != Steady {
		t.Fatalf("want replicas-changed Steady -> Steady, got %s", d)
	}
	if d.Next.PodsPerShard != 4 || d.Transition.Why != (Reason{Kind: ReasonScaleUp, Pods: 4, PodsWere: 3}) {
		t.Fatalf("want 4 pods per shard recorded, got %d (%s)", d.Next.PodsPerShard, d.Transition.Message)
	}
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || got[0] != "ensure-objects shards=1 replicas=3 revision=r1" {
		t.Fatalf("want the objects asked for 4 pods at once, got %s", d)
	}
	// The new pod comes up empty: Steady makes it follow the primary, without a transition.
	fresh := node(3, RoleReplica, "fresh", 0)
	d = Decide(d.Next, obsAt(6, spec, append(ledBy(0, 5, 5, 5), fresh)...))
	if d.Transition != nil {
		t.Fatalf("no second transition for the same change, got %s", d)
	}
	if got := actionsOf(d, "replica-of"); len(got) != 1 || !strings.HasPrefix(got[0], "replica-of s0-3 -> s0-0") {
		t.Fatalf("want the new pod pointed at the primary, got %s", d)
	}
}

func TestScaleDownWithThePrimaryOnAKeptOrdinal(t *testing.T) {
	spec := testSpec(1) // 2 pods per shard: ordinal 2 goes
	d := Decide(recordedAt(0, 3), withObjects(obsAt(5, spec, ledBy(0, 5, 5, 5)...), 2))
	if d.Transition == nil || d.Transition.Event != EventReplicasChanged || d.Next.PodsPerShard != 2 || d.Next.State != Steady {
		t.Fatalf("want replicas-changed recording 2 pods, got %s", d)
	}
	if d.Transition.Why != (Reason{Kind: ReasonScaleDown, Pods: 2, PodsWere: 3}) || d.Transition.Message != d.Transition.Why.String() {
		t.Fatalf("message: %q", d.Transition.Message)
	}
	// s0-2 still follows the primary, and would acknowledge writes until its pod stops: it is
	// detached first.
	if got := actionsOf(d, "detach"); len(got) != 1 || !strings.HasPrefix(got[0], "detach s0-2") || shrinks(d, 3) {
		t.Fatalf("the primary stays: want s0-2 detached before the objects shrink, got %s", d)
	}
	nodes := ledBy(0, 5, 5, 5)
	nodes[2] = detached(nodes[2])
	d = Decide(d.Next, withObjects(obsAt(6, spec, nodes...), 2))
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || got[0] != "ensure-objects shards=1 replicas=1 revision=r1" || len(actionsOf(d, "replica-of")) > 0 {
		t.Fatalf("s0-2 detached: want the objects shrunk, and s0-2 not pointed at the primary again, got %s", d)
	}
	// The spec asks for 3 pods again before the pod went: s0-2 follows the primary again.
	more := spec
	more.Replicas = 2
	back := Decide(d.Next, withObjects(obsAt(7, more, nodes...), 2))
	back = Decide(back.Next, withObjects(obsAt(8, more, nodes...), 2))
	if got := actionsOf(back, "replica-of"); len(got) != 1 || !strings.HasPrefix(got[0], "replica-of s0-2 -> s0-0") {
		t.Fatalf("scale-down called off: want s0-2 following the primary again, got %s", back)
	}
	// Once the pod is gone the cluster is converged with nothing to do.
	d = Decide(d.Next, obsAt(6, spec, ledBy(0, 5, 5)...))
	if d.Transition != nil || len(d.Actions) > 0 || !d.Waiting.IsZero() {
		t.Fatalf("want a settled Steady, got %s", d)
	}
}

// A replica being removed may hold WAIT-acknowledged writes the replica that stays lacks yet
// (it lags): removed with its claim, they would be on the primary alone, lost with it (a
// review found it; the simulator had counted the removal as a fault). The scale-down waits
// until the replica that stays holds them, then shrinks the objects.
func TestScaleDownWaitsUntilTheReplicasThatStayHoldWhatTheRemovedOnesHold(t *testing.T) {
	spec := testSpec(1) // 2 pods per shard: ordinal 2 goes
	d := Decide(recordedAt(0, 3), withObjects(obsAt(5, spec, ledBy(0, 9, 4, 9)...), 2))
	if d.Transition == nil || d.Transition.Event != EventReplicasChanged {
		t.Fatalf("want replicas-changed, got %s", d)
	}
	if shrinks(d, 3) || len(actionsOf(d, "detach")) != 1 {
		t.Fatalf("want the shrink held back while s0-1 lags behind s0-2, and s0-2 detached, got %s", d)
	}
	next := d.Next
	caughtUp := ledBy(0, 9, 9, 9)
	if d = Decide(next, withObjects(obsAt(6, spec, caughtUp...), 2)); shrinks(d, 3) || len(actionsOf(d, "detach")) != 1 {
		t.Fatalf("want s0-2 detached first, got %s", d)
	}
	// Detached, s0-2 acknowledged writes up to offset 12 the primary sent meanwhile: s0-1 must
	// hold them too.
	caughtUp[2] = detached(node(2, RoleReplica, "h1", 12))
	caughtUp[0].Valkey.Offset = 12
	if d = Decide(next, withObjects(obsAt(6, spec, caughtUp...), 2)); shrinks(d, 3) || (d.Waiting.Kind != WaitScaleBlocked || !strings.Contains(d.Waiting.Detail, "s0-2, being removed, holds writes (offset 12)")) {
		t.Fatalf("want the shrink held back while s0-1 lags behind the detached s0-2, got %s", d)
	}
	caughtUp[1].Valkey.Offset = 12
	if d = Decide(next, withObjects(obsAt(6, spec, caughtUp...), 2)); !shrinks(d, 3) {
		t.Fatalf("want the objects shrunk once s0-1 holds what the detached s0-2 holds, got %s", d)
	}
	// s0-2 does not answer: it may hold anything the primary sent, so s0-1 must hold all of
	// the primary's data.
	nodes := ledBy(0, 9, 4, 9)
	nodes[2] = unreachable(nodes[2], 3)
	if d := Decide(next, withObjects(obsAt(7, spec, nodes...), 2)); shrinks(d, 3) || (d.Waiting.Kind != WaitScaleBlocked || !strings.Contains(d.Waiting.Detail, "s0-2, being removed, does not answer")) {
		t.Fatalf("want the shrink held back while s0-1 lags behind the primary, got %s", d)
	}
	nodes = ledBy(0, 9, 9, 9)
	nodes[2] = unreachable(nodes[2], 3)
	if d := Decide(next, withObjects(obsAt(8, spec, nodes...), 2)); !shrinks(d, 3) {
		t.Fatalf("want the objects shrunk once s0-1 holds all of the primary's data, got %s", d)
	}
	// No replica that stays answers (s0-1 unreachable): s0-2, being removed, is the only one
	// that may hold acknowledged writes, so the scale-down waits (counted against the ordinals
	// that stay, not the replicas following now).
	nodes = ledBy(0, 9, 9, 9)
	nodes[1] = unreachable(nodes[1], 3)
	if d := Decide(next, withObjects(obsAt(11, spec, nodes...), 2)); shrinks(d, 3) {
		t.Fatalf("want the shrink held back while no replica that stays follows, got %s", d)
	}
	// s0-2 is deposed and off the line (writes of its own beyond its mark): only the line up
	// to its mark must be held, or the scale-down would wait for good.
	deposed := next
	deposed.Shards = append([]ShardRecord(nil), next.Shards...)
	deposed.Shards[0].Deposed = []DeposedPod{{Pod: "s0-2", Keys: 5, Left: HistoryLink{ID: "h1", End: 6}}}
	nodes = ledBy(0, 9, 9, 9)
	nodes[2] = detached(node(2, RoleReplica, "h-off", 20))
	nodes[2].Valkey.Keys = 20
	if d := Decide(deposed, withObjects(obsAt(9, spec, nodes...), 2)); !shrinks(d, 3) {
		t.Fatalf("want the objects shrunk: s0-1 holds the line up to s0-2's mark, got %s", d)
	}
	nodes[1] = ledBy(0, 9, 4)[1]
	if d := Decide(deposed, withObjects(obsAt(10, spec, nodes...), 2)); shrinks(d, 3) {
		t.Fatalf("want the shrink held back while s0-1 lags behind s0-2's mark, got %s", d)
	}
}

func TestScaleDownHandsOverAPrimaryOnARemovedOrdinalFirst(t *testing.T) {
	// 4 pods led by s0-3; the spec asks for 2: ordinals 2 and 3 go. s0-2 is the most
	// advanced replica but goes too: s0-1 (ahead of s0-0) takes over.
	spec := testSpec(1)
	nodes := ledBy(3, 4, 6, 9, 9)
	p := recordedAt(3, 4)
	d := Decide(p, withObjects(obsAt(5, spec, nodes...), 3))
	if d.Transition == nil || d.Transition.Event != EventReplicasChanged || d.Next.PodsPerShard != 2 {
		t.Fatalf("want replicas-changed, got %s", d)
	}
	if d.Transition.Why != (Reason{Kind: ReasonScaleDown, Pods: 2, PodsWere: 4, Primaries: "s0-3"}) {
		t.Fatalf("message: %q", d.Transition.Message)
	}
	if len(actionsOf(d, "ensure-objects")) != 0 || (d.Waiting.Kind != WaitScaleBlocked || !strings.Contains(d.Waiting.Detail, "hands over first")) {
		t.Fatalf("the objects must not shrink while the primary is on a removed ordinal: %s", d)
	}
	d = Decide(d.Next, withObjects(obsAt(6, spec, nodes...), 3))
	if d.Transition == nil || d.Transition.Event != EventScaleDownHandOver || d.Next.State != FailingOver {
		t.Fatalf("want scale-down-hand-over to FailingOver, got %s", d)
	}
	if op := d.Next.Op; !op.Election.Planned || op.HandOver.To != "s0-1" || op.Switchover.To != "s0-1" || op.Switchover.Pods != 2 || op.Election.Lost != "s0-3" {
		t.Fatalf("want a planned hand-over to s0-1 recorded first, got %+v", op)
	}
	if got := actionsOf(d, "hand-over"); len(got) != 1 || got[0] != "hand-over s0-3 -> s0-1" || shrinks(d, 4) {
		t.Fatalf("want FAILOVER TO s0-1 and nothing shrunk, got %s", d)
	}
	// FAILOVER TO happened: s0-1 continues h1 as h2, the others follow it.
	after := ledBy(1, 9, 9, 9, 9)
	for i := range after {
		after[i].Valkey.ReplID = "h2"
	}
	after[1].Valkey.ReplID2, after[1].Valkey.SecondOffset = "h1", 10
	d = Decide(d.Next, withObjects(obsAt(7, spec, after...), 3))
	if d.Transition == nil || d.Transition.Event != EventFailoverComplete || d.Next.State != Steady || d.Next.Shards[0].Primary != "s0-1" {
		t.Fatalf("want failover-complete recording s0-1, got %s", d)
	}
	if want := (Reason{Kind: ReasonSwitchedOver, Goal: GoalScaleDown, Node: "s0-3", Peer: "s0-1", Pods: 2}); d.Transition.Why != want {
		t.Fatalf("reason %+v, want %+v", d.Transition.Why, want)
	}
	if got := actionsOf(d, "detach"); len(got) != 2 || shrinks(d, 4) {
		t.Fatalf("now s0-2 and s0-3 are detached first, got %s", d)
	}
	after[2], after[3] = detached(after[2]), detached(after[3])
	d = Decide(d.Next, withObjects(obsAt(8, spec, after...), 3))
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || got[0] != "ensure-objects shards=1 replicas=1 revision=r1" {
		t.Fatalf("now the objects shrink, got %s", d)
	}
}

func TestReplicasChangedIsRecordedOncePerChange(t *testing.T) {
	spec := testSpec(1)
	p := recordedAt(2, 3)
	obs := withObjects(obsAt(5, spec, ledBy(2, 5, 5, 5)...), 2)
	d := Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventReplicasChanged {
		t.Fatalf("want replicas-changed, got %s", d)
	}
	again := Decide(d.Next, obs)
	if again.Transition != nil || !reflect.DeepEqual(again.Actions, d.Actions) {
		t.Fatalf("re-delivery: %s then %s", d, again)
	}
	// A later observation of the same request does not record it again.
	later := Decide(d.Next, withObjects(obsAt(6, spec, ledBy(2, 5, 5, 5)...), 2))
	if later.Transition != nil && later.Transition.Event == EventReplicasChanged {
		t.Fatalf("the same change recorded twice: %s", later)
	}
	// A second change of the count is a second transition.
	spec2 := testSpec(3)
	second := Decide(d.Next, withObjects(obsAt(7, spec2, ledBy(2, 5, 5, 5)...), 2))
	if second.Transition == nil || second.Transition.Event != EventReplicasChanged || second.Next.PodsPerShard != 4 || second.Transition.Seq != d.Transition.Seq+1 {
		t.Fatalf("want a second replicas-changed recording 4 pods, got %s", second)
	}
	if got := actionsOf(second, "ensure-objects"); len(got) != 1 || got[0] != "ensure-objects shards=1 replicas=3 revision=r1" {
		t.Fatalf("scale-up after an unfinished scale-down: want 4 pods at once, got %s", second)
	}
}

// handingOver is the persisted state of a scale-down from 3 to 2 pods whose primary s0-2
// hands over to s0-1.
func handingOver() Persisted {
	p := recordedAt(2, 2)
	p.State, p.Seq = FailingOver, 3
	p.Op = Operation{Election: Election{Shard: 0, Lost: "s0-2", LostRunID: "run-2", LostHistory: History{ID: "h1"}, Planned: true}, Switchover: SwitchoverGoal{To: "s0-1", Pods: 2}, HandOver: HandOverMark{Shard: 0, To: "s0-1"}}
	return p
}

func TestSpecChangeAbortsAScaleDownHandOver(t *testing.T) {
	// Back to 3 pods before the hand-over happened: abort to Steady, which records the count.
	spec := testSpec(2)
	d := Decide(handingOver(), withObjects(obsAt(5, spec, ledBy(2, 5, 5, 5)...), 2))
	if d.Transition == nil || d.Transition.Event != EventSpecChanged || d.Next.State != Steady || d.Next.Op != (Operation{}) {
		t.Fatalf("want spec-changed to Steady, got %s", d)
	}
	d = Decide(d.Next, withObjects(obsAt(6, spec, ledBy(2, 5, 5, 5)...), 2))
	if d.Transition == nil || d.Transition.Event != EventReplicasChanged || d.Next.PodsPerShard != 3 {
		t.Fatalf("want replicas-changed recording 3 pods, got %s", d)
	}
	// The hand-over may have happened (the recorded primary follows s0-1 now): no abort,
	// failover-complete records it.
	after := ledBy(1, 5, 5, 5)
	for i := range after {
		after[i].Valkey.ReplID = "h2"
	}
	after[1].Valkey.ReplID2, after[1].Valkey.SecondOffset = "h1", 6
	d = Decide(handingOver(), withObjects(obsAt(5, spec, after...), 2))
	if d.Transition == nil || d.Transition.Event != EventFailoverComplete || d.Next.Shards[0].Primary != "s0-1" {
		t.Fatalf("want failover-complete, got %s", d)
	}
	// The primary still answers but the target stopped being a caught-up replica:
	// switchover-stale (the count did not change).
	lagging := ledBy(2, 5, 5, 5)
	lagging[1].Valkey.LinkUp = false
	d = Decide(handingOver(), withObjects(obsAt(5, testSpec(1), lagging...), 2))
	if d.Transition == nil || d.Transition.Event != EventSwitchoverStale ||
		d.Transition.Why != (Reason{Kind: ReasonHandOverTargetGone, Shard: 0, Goal: GoalScaleDown, Node: "s0-2", Peer: "s0-1"}) {
		t.Fatalf("want switchover-stale, got %s", d)
	}
	// Nothing wrong: the hand-over is asked for, the objects stay as they are.
	d = Decide(handingOver(), withObjects(obsAt(5, testSpec(1), ledBy(2, 5, 5, 5)...), 2))
	if d.Transition != nil || len(actionsOf(d, "hand-over")) != 1 || shrinks(d, 3) {
		t.Fatalf("want the hand-over asked for, got %s", d)
	}
}

func TestFailoverPreemptsAScaleDownHandOver(t *testing.T) {
	nodes := ledBy(2, 5, 5, 5)
	nodes[2] = unreachable(nodes[2], 5)
	d := Decide(handingOver(), withObjects(obsAt(5, testSpec(1), nodes...), 2))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost || d.Next.Op.Election.Planned || d.Next.Op.HandOver.To != "s0-1" {
		t.Fatalf("want primary-lost keeping the recorded hand-over target, got %s (%+v)", d, d.Next.Op)
	}
	if d.Transition.Why.Pods != 2 || shrinks(d, 3) {
		t.Fatalf("want the scale-down named and nothing shrunk: %s", d)
	}
}

func TestElectionPrefersAnOrdinalThatStays(t *testing.T) {
	// 4 pods led by s0-3, 2 recorded: s0-3 is lost while ordinals 2 and 3 still exist.
	spec := testSpec(1)
	lost := func(offsets ...int64) Decision {
		t.Helper()
		nodes := ledBy(3, offsets...)
		nodes[3] = unreachable(nodes[3], 5)
		d := Decide(recordedAt(3, 2), withObjects(obsAt(5, spec, nodes...), 3))
		if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
			t.Fatalf("want primary-lost, got %s", d)
		}
		for i := 0; i < 3; i++ {
			nodes[i] = detached(nodes[i])
		}
		return Decide(d.Next, withObjects(obsAt(6, spec, nodes...), 3))
	}
	if d := lost(5, 7, 7, 0); d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("s0-1 and s0-2 hold the same: want s0-1, whose ordinal stays, got %s", d)
	}
	// s0-2 was promoted (fenced, nothing written since): it holds what s0-1 holds and is
	// already a primary, which would otherwise make it the choice.
	nodes := ledBy(3, 5, 7, 7, 0)
	nodes[3] = unreachable(nodes[3], 5)
	d := Decide(recordedAt(3, 2), withObjects(obsAt(5, spec, nodes...), 3))
	nodes[0], nodes[1] = detached(nodes[0]), detached(nodes[1])
	v := &nodes[2].Valkey
	v.Role, v.PrimaryHost, v.LinkUp, v.ReplID, v.ReplID2, v.SecondOffset = RolePrimary, "", false, "h9", "h1", 8
	if d = Decide(d.Next, withObjects(obsAt(6, spec, nodes...), 3)); d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("want s0-1 rather than the promoted s0-2 on a removed ordinal, got %s", d)
	}
	// Safety first: s0-2 alone holds everything, it is elected (and hands over later).
	if d := lost(5, 6, 7, 0); d.Next.Op.Election.Candidate != "s0-2" {
		t.Fatalf("want s0-2, the only node holding all the data, got %s", d)
	}
}

func TestLegacyRecordWithoutAPodCount(t *testing.T) {
	// Persisted before PodsPerShard existed: what the objects ask for counts.
	p := steadyState()
	d := Decide(p, obsAt(5, testSpec(2), ledBy(0, 5, 5, 5)...))
	if d.Transition != nil || len(d.Actions) > 0 {
		t.Fatalf("objects as the spec asks: want nothing, got %s", d)
	}
	d = Decide(p, withObjects(obsAt(5, testSpec(1), ledBy(0, 5, 5, 5)...), 2))
	if d.Transition == nil || d.Transition.Event != EventReplicasChanged || d.Transition.Why != (Reason{Kind: ReasonScaleDown, Pods: 2, PodsWere: 3}) {
		t.Fatalf("want replicas-changed from the objects' 3 pods, got %s", d)
	}
}

// clusterOfThree is one shard of three joined cluster nodes led by s0-0, which serves every slot.
func clusterOfThree() (Spec, []Node) {
	spec := testSpec(1)
	spec.Mode = ModeCluster
	nodes := ledBy(0, 5, 5, 5)
	for i := range nodes {
		nodes[i].Valkey.Joined = true
	}
	nodes[0].Valkey.Slots = []SlotRange{{Start: 0, End: NumSlots - 1}}
	return spec, nodes
}

func TestClusterModeScaleDownLeavesTheBusFirst(t *testing.T) {
	spec, nodes := clusterOfThree()
	d := Decide(recordedAt(0, 3), withObjects(obsAt(5, spec, nodes...), 2))
	if d.Transition == nil || d.Transition.Event != EventReplicasChanged {
		t.Fatalf("want replicas-changed, got %s", d)
	}
	if got := actionsOf(d, "remove-node"); len(got) != 1 || got[0] != "remove-node s0-2" || shrinks(d, 3) {
		t.Fatalf("want s0-2 to leave the cluster bus before its pod goes, got %s", d)
	}
	nodes[2].Valkey.Joined = false
	d = Decide(d.Next, withObjects(obsAt(6, spec, nodes...), 2))
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "replicas=1") || len(actionsOf(d, "add-node")) > 0 {
		t.Fatalf("want the objects shrunk and s0-2 not joined again, got %s", d)
	}
}

// TestANodeOffTheBusIsNotMetAgainWhileTheScaleDownWaits: s0-2 left the cluster bus for a
// scale-down to 2 pods, then the scale-down is held back (s0-1, which stays, lost its link).
// The machine must not meet s0-2 again: it would rejoin as an empty master and be removed again
// once the hold-up passes (found by the simulator, where the re-joined node counted as a writer).
func TestANodeOffTheBusIsNotMetAgainWhileTheScaleDownWaits(t *testing.T) {
	spec, nodes := clusterOfThree()
	d := Decide(recordedAt(0, 3), withObjects(obsAt(5, spec, nodes...), 2))
	if got := actionsOf(d, "remove-node"); len(got) != 1 {
		t.Fatalf("want s0-2 to leave the bus first, got %s", d)
	}
	nodes[2].Valkey = Valkey{RunID: nodes[2].Valkey.RunID, Role: RolePrimary, SecondOffset: -1, WritesFenced: true, SyncFenced: true}
	nodes[1].Valkey.LinkUp = false
	d = Decide(d.Next, withObjects(obsAt(6, spec, nodes...), 2))
	if got := actionsOf(d, "add-node"); len(got) > 0 {
		t.Fatalf("s0-2, off the bus for the scale-down, is met again while the scale-down waits: %s", d)
	}
}

// A node being removed that came back from its append-only file (a fresh ID, its data
// unmeasured) is no node the scale-down detached: it is pointed at the primary, as any replica
// of nothing, or no replica that stays could ever be shown to hold what it holds (found by the
// simulator: regressions/scale-down-of-a-node-back-from-its-file.sched).
func TestScaleDownPointsANodeBackFromItsFileAtThePrimary(t *testing.T) {
	spec := durableSpec(1) // 2 pods per shard: ordinal 2 goes
	p := recordedAt(0, 2)
	nodes := ledBy(0, 5, 5, 5)
	nodes[2] = fromAppendOnlyFile(2, 1)
	d := Decide(p, withObjects(obsAt(6, spec, nodes...), 2))
	if got := actionsOf(d, "replica-of"); len(got) != 1 || !strings.HasPrefix(got[0], "replica-of s0-2 -> s0-0") || shrinks(d, 3) {
		t.Fatalf("want s0-2 pointed at the primary and the objects kept, got %s", d)
	}
}

// Only a removed node that follows the primary in a history of the line is detached (found by
// a review): one still syncing under another history (back from its append-only file) finishes
// first, or Detach and ReplicaOf would alternate and the sync never end; one that follows
// another address is pointed at the primary, and not detached in the same decision. Once the
// objects shrank, a removed node is never pointed back, whatever the replicas that stay do.
func TestScaleDownDetachesOnlyANodeFollowingThePrimaryOnTheLine(t *testing.T) {
	spec := durableSpec(1) // 2 pods per shard: ordinal 2 goes
	p := recordedAt(0, 2)
	nodes := ledBy(0, 5, 5, 5)
	syncing := fromAppendOnlyFile(2, 1)
	syncing.Valkey.PrimaryHost = nodes[0].Pod.IP
	nodes[2] = syncing
	d := Decide(p, withObjects(obsAt(6, spec, nodes...), 2))
	if len(actionsOf(d, "detach")) > 0 || shrinks(d, 3) {
		t.Fatalf("a node syncing under another history was detached mid-sync: %s", d)
	}
	nodes = ledBy(0, 5, 5, 5)
	nodes[2].Valkey.PrimaryHost = "10.0.0.9" // an old primary's address
	d = Decide(p, withObjects(obsAt(7, spec, nodes...), 2))
	if got := actionsOf(d, "replica-of"); len(got) != 1 || len(actionsOf(d, "detach")) > 0 {
		t.Fatalf("want s0-2 pointed at the primary first, not detached with it, got %s", d)
	}
	// Shrunk: s0-1's link drops (the shards' shape no longer allows a scale-down), s0-2 stays
	// detached.
	nodes = ledBy(0, 5, 5, 5)
	nodes[1].Valkey.LinkUp = false
	nodes[2] = detached(nodes[2])
	d = Decide(p, withObjects(obsAt(8, spec, nodes...), 1))
	for _, a := range actionsOf(d, "replica-of") {
		if strings.HasPrefix(a, "replica-of s0-2") {
			t.Fatalf("a removed node pointed back at the primary after the shrink: %s", d)
		}
	}
}
