package machine

import (
	"strings"
	"testing"
)

// TestADeletedPrimaryPodHandsOverBeforeItStops: the primary's pod is terminating while its
// process still runs (held by the preStop hook): the machine records a planned hand-over with
// its cause, to the most advanced caught-up replica whose pod is not being deleted too, asks
// for FAILOVER TO, and records the new primary once the old one follows it.
func TestADeletedPrimaryPodHandsOverBeforeItStops(t *testing.T) {
	spec := testSpec(2)
	prim, r1, r2 := primary(100), replica(1, 100), replica(2, 100)
	prim.Pod.Terminating = true
	r1.Pod.Terminating = true // a drain may evict two pods of the shard at once
	d := Decide(steadyState(), obsAt(5, spec, prim, r1, r2))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLeaving || d.Next.State != FailingOver {
		t.Fatalf("want primary-leaving, got %s", d)
	}
	op := d.Next.Op
	if !op.Election.Planned || !op.Switchover.Leaving || op.HandOver.To != "s0-2" || d.Transition.Why != (Reason{Kind: ReasonHandOverStarted, Goal: GoalLeaving, Node: "s0-0", Peer: "s0-2"}) {
		t.Fatalf("want a planned hand-over to s0-2 recorded with its cause, got %+v: %s", op, d.Transition.Message)
	}
	if got := actionsOf(d, "hand-over"); len(got) != 1 || !strings.Contains(got[0], "s0-2") {
		t.Fatalf("want FAILOVER TO s0-2, got %s", d)
	}
	// Handed over: s0-2 serves the history, the old primary follows it.
	p := d.Next
	newPrim := node(2, RolePrimary, "h2", 100)
	newPrim.Valkey.ReplID2, newPrim.Valkey.WritesFenced, newPrim.Valkey.SyncFenced = "h1", false, false
	old := node(0, RoleReplica, "h2", 100)
	old.Valkey.PrimaryHost, old.Valkey.LinkUp, old.Pod.Terminating = newPrim.Pod.IP, true, true
	d = Decide(p, obsAt(6, spec, old, r1, newPrim))
	if d.Transition == nil || d.Transition.Event != EventFailoverComplete || d.Next.Shards[0].Primary != "s0-2" ||
		d.Transition.Why != (Reason{Kind: ReasonSwitchedOver, Goal: GoalLeaving, Node: "s0-0", Peer: "s0-2"}) {
		t.Fatalf("want the hand-over recorded, got %s", d)
	}
}

// TestADeletedPrimaryWithoutACaughtUpReplicaSaysSo: nothing to hand over to (the only replica
// is unlinked): no transition, and Steady says the pod stops as the primary.
func TestADeletedPrimaryWithoutACaughtUpReplicaSaysSo(t *testing.T) {
	prim, r1 := primary(100), replica(1, 90)
	prim.Pod.Terminating = true
	r1.Valkey.LinkUp = false
	d := Decide(steadyState(), obsAt(5, testSpec(1), prim, r1))
	if d.Transition != nil && d.Transition.Event == EventPrimaryLeaving {
		t.Fatalf("handed over to an unlinked replica: %s", d)
	}
	if d.Waiting.Kind != WaitLeaving || !strings.Contains(d.Waiting.Detail, "s0-0's pod is being deleted") {
		t.Fatalf("waiting = %q", d.Waiting)
	}
}

// TestAHandOverBeforeADeletionIsAbandonedWhenItsTargetGoes: the target stops being a caught-up
// replica (its pod is deleted too) before FAILOVER TO: the hand-over is abandoned, and Steady
// plans it again to another replica.
func TestAHandOverBeforeADeletionIsAbandonedWhenItsTargetGoes(t *testing.T) {
	spec := testSpec(2)
	prim, r1, r2 := primary(100), replica(1, 100), replica(2, 100)
	prim.Pod.Terminating = true
	d := Decide(steadyState(), obsAt(5, spec, prim, r1, r2))
	if d.Transition == nil || d.Next.Op.HandOver.To != "s0-1" {
		t.Fatalf("want a hand-over to s0-1, got %s", d)
	}
	r1.Pod.Terminating = true
	d = Decide(d.Next, obsAt(6, spec, prim, r1, r2))
	if d.Transition == nil || d.Transition.Event != EventSwitchoverStale ||
		d.Transition.Why != (Reason{Kind: ReasonHandOverTargetGone, Shard: 0, Goal: GoalLeaving, Node: "s0-0", Peer: "s0-1"}) {
		t.Fatalf("want the hand-over abandoned, got %s", d)
	}
	d = Decide(d.Next, obsAt(7, spec, prim, r1, r2))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLeaving || d.Next.Op.HandOver.To != "s0-2" {
		t.Fatalf("want a hand-over to s0-2 next, got %s", d)
	}
}

// TestAHandOverSeenFromTheOldPrimaryFirstIsNoLoss: the two nodes of a hand-over are surveyed a
// moment apart, so an observation may show the old primary already following its target
// while the target still says replica of it. That is FAILOVER TO under way, not a lost
// primary: no failover starts, and the next observation records the hand-over.
func TestAHandOverSeenFromTheOldPrimaryFirstIsNoLoss(t *testing.T) {
	spec := testSpec(2)
	p := steadyState()
	p.State = FailingOver
	p.Op = Operation{Election: Election{Shard: 0, Lost: "s0-0", LostRunID: "run-0", LostHistory: History{ID: "h1"}, Planned: true}, Switchover: SwitchoverGoal{To: "s0-1", Leaving: true}, HandOver: HandOverMark{Shard: 0, To: "s0-1"}}
	old := node(0, RoleReplica, "h1", 100)
	old.Valkey.PrimaryHost, old.Valkey.LinkUp, old.Pod.Terminating = "10.0.0.2", false, true
	target := replica(1, 100) // still follows s0-0 (10.0.0.1) in this survey
	d := Decide(p, obsAt(5, spec, old, target, replica(2, 100)))
	if d.Transition != nil {
		t.Fatalf("a hand-over under way taken for a lost primary: %s", d)
	}
	promoted := node(1, RolePrimary, "h2", 100)
	promoted.Valkey.ReplID2, promoted.Valkey.WritesFenced, promoted.Valkey.SyncFenced = "h1", false, false
	old.Valkey.LinkUp = true
	d = Decide(p, obsAt(6, spec, old, promoted, replica(2, 100)))
	if d.Transition == nil || d.Transition.Event != EventFailoverComplete || d.Next.Shards[0].Primary != "s0-1" {
		t.Fatalf("want the hand-over recorded, got %s", d)
	}
}
