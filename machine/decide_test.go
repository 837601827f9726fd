package machine

import (
	"strings"
	"testing"
)

func TestNewClusterBootstraps(t *testing.T) {
	spec := testSpec(2)
	// Fresh pods: all replicas of nothing, fenced, empty.
	fresh := func(ord int) Node { return node(ord, RoleReplica, "fresh"+string(rune('a'+ord)), 0) }
	d := Decide(Persisted{}, obsAt(1, spec, fresh(0), fresh(1), fresh(2)))
	if d.Transition != nil || d.Next.State != Bootstrapping {
		t.Fatalf("zero state should stay Bootstrapping, got %s", d)
	}
	if got := actionsOf(d, "promote"); len(got) != 1 || got[0] != "promote s0-0" {
		t.Fatalf("want s0-0 promoted first, got %v", got)
	}
	if got := actionsOf(d, "replica-of"); len(got) != 2 {
		t.Fatalf("want both others pointed at s0-0, got %v", got)
	}
	// Wired: s0-0 serves, the others follow it.
	p0 := node(0, RolePrimary, "h1", 0)
	p0.Valkey.WritesFenced, p0.Valkey.SyncFenced = true, false
	d = Decide(d.Next, obsAt(2, spec, p0, replica(1, 0), replica(2, 0)))
	if d.Transition == nil || d.Transition.Event != EventBootstrapComplete || d.Next.State != Steady {
		t.Fatalf("want bootstrap-complete, got %s", d)
	}
	if rec := d.Next.Shards[0]; rec.Primary != "s0-0" || rec.RunID != "run-0" || rec.History.ID != "h1" {
		t.Fatalf("record = %+v", rec)
	}
	if got := actionsOf(d, "open-writes"); len(got) != 1 {
		t.Fatalf("Steady must open the recorded primary for writes, got %s", d)
	}
}

func TestNoFailoverWhilePrimaryAnswers(t *testing.T) {
	// Replicas ahead of the primary, a replica unreachable: the primary answers as the
	// recorded process, so nothing is replaced.
	d := Decide(steadyState(), obsAt(5, testSpec(2), primary(10), replica(1, 12), unreachable(replica(2, 0), 9)))
	if d.Transition != nil {
		t.Fatalf("primary answers: want no transition, got %s", d)
	}
}

func TestNoFailoverBeforeThresholdProbes(t *testing.T) {
	d := Decide(steadyState(), obsAt(5, testSpec(2), unreachable(primary(0), 2), replica(1, 5), replica(2, 5)))
	if d.Transition != nil {
		t.Fatalf("2 of 3 probes failed: want no transition, got %s", d)
	}
	if w := d.Waiting; w.Kind != WaitFailover || w.Shard != 0 || !strings.Contains(w.Detail, "2 of 3 probes") {
		t.Fatalf("waiting should say why: %q", d.Waiting)
	}
	d = Decide(steadyState(), obsAt(5, testSpec(2), unreachable(primary(0), 3), replica(1, 5), replica(2, 5)))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("3 of 3 probes failed: want primary-lost, got %s", d)
	}
}

func TestNoFailoverWithoutQuorum(t *testing.T) {
	// MinSyncReplicas 1: every replica must be seen, an unseen one may hold the only copy of
	// a WAIT-acknowledged write.
	d := Decide(steadyState(), obsAt(5, testSpec(2), unreachable(primary(0), 5), replica(1, 5), unreachable(replica(2, 0), 5)))
	if d.Transition != nil {
		t.Fatalf("a replica unseen: want no failover, got %s", d)
	}
	// MinSyncReplicas 2 of 3 replicas: one may be unseen.
	spec := testSpec(3)
	spec.MinSyncReplicas = 2
	d = Decide(steadyState(), obsAt(5, spec, unreachable(primary(0), 5), replica(1, 5), replica(2, 5), unreachable(replica(3, 0), 5)))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("one of three unseen with MinSyncReplicas 2: want primary-lost, got %s", d)
	}
}

func TestNoFailoverWithoutEligibleReplica(t *testing.T) {
	// The only replicas restarted empty (fresh history, offset 0) while the primary may
	// still be alive: nobody to promote, and the primary may hold the data.
	empty := func(ord int) Node { return node(ord, RoleReplica, "fresh", 0) }
	d := Decide(steadyState(), obsAt(5, testSpec(2), unreachable(primary(0), 5), empty(1), empty(2)))
	if d.Transition != nil {
		t.Fatalf("no eligible replica: want no failover, got %s", d)
	}
}

// failingOver runs the failover of s0-0 from Steady until the election and returns the
// persisted state after it.
func failingOver(t *testing.T, nodes ...Node) (Persisted, Decision) {
	t.Helper()
	spec := testSpec(len(nodes))
	all := append([]Node{unreachable(primary(0), 5)}, nodes...)
	d := Decide(steadyState(), obsAt(5, spec, all...))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost, got %s", d)
	}
	p := d.Next
	frozen := []Node{unreachable(primary(0), 6)}
	for _, n := range nodes {
		frozen = append(frozen, detached(n))
	}
	d = Decide(p, obsAt(6, spec, frozen...))
	return p, d
}

func TestFreezeBeforeElecting(t *testing.T) {
	spec := testSpec(2)
	d := Decide(steadyState(), obsAt(5, spec, unreachable(primary(0), 5), replica(1, 5), replica(2, 7)))
	if got := actionsOf(d, "detach"); len(got) != 2 {
		t.Fatalf("want both replicas detached before an election, got %s", d)
	}
	if got := actionsOf(d, "promote"); len(got) != 0 {
		t.Fatalf("no promotion while offsets may move: %s", d)
	}
}

func TestElectsHighestOffsetOfTheHistory(t *testing.T) {
	_, d := failingOver(t, replica(1, 5), replica(2, 7), replica(3, 6))
	if d.Transition == nil || d.Transition.Event != EventCandidateElected || d.Next.Op.Election.Candidate != "s0-2" {
		t.Fatalf("want s0-2 (offset 7) elected, got %s", d)
	}
	if got := actionsOf(d, "promote"); len(got) != 1 || got[0] != "promote s0-2" {
		t.Fatalf("want s0-2 promoted after the election is recorded, got %v", got)
	}
	if d.Next.Shards[0].Primary != "s0-2" || d.Next.Shards[0].Epoch != 2 {
		t.Fatalf("the record must name the elected node before it is touched: %+v", d.Next.Shards[0])
	}
}

func TestNeverElectsAcrossAFork(t *testing.T) {
	// The record says h2, which continued h1 below offset 6. s0-2 went on in h1 beyond that
	// point (an isolated old primary's writes): a known fork, never a candidate.
	p := steadyState()
	p.Shards[0].History = History{ID: "h2", PrevID: "h1", PrevEnd: 6}
	prim := primary(9)
	prim.Valkey.ReplID = "h2"
	inLine := replica(1, 8)
	inLine.Valkey.ReplID = "h2"
	forked := replica(2, 50)
	spec := testSpec(2)
	d := Decide(p, obsAt(5, spec, unreachable(prim, 5), inLine, forked))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost, got %s", d)
	}
	d = Decide(d.Next, obsAt(6, spec, unreachable(prim, 6), detached(inLine), detached(forked)))
	if d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("want s0-1 elected (s0-2 forked off h1 at 50 > 6), got %s", d)
	}
	// A node on its own holding data of a history nobody knows (a promoted node, or a
	// hand-over target, restarted before its new ID was recorded) is compared by offset:
	// it may hold the newest writes.
	stranger := detached(replica(2, 50))
	stranger.Valkey.ReplID = "other"
	_, d = failingOver(t, replica(1, 5), stranger)
	if d.Next.Op.Election.Candidate != "s0-2" {
		t.Fatalf("want s0-2 (offset 50, history unknown) elected, got %s", d)
	}
	// Two candidates that each continued h1 and then diverged: nobody contains the other,
	// so the primary is not failed over at all, and the reason is given.
	a := detached(replica(1, 9))
	a.Valkey.ReplID, a.Valkey.ReplID2, a.Valkey.SecondOffset = "ha", "h1", 6
	b := detached(replica(2, 8))
	b.Valkey.ReplID, b.Valkey.ReplID2, b.Valkey.SecondOffset = "hb", "h1", 7
	d = Decide(steadyState(), obsAt(5, spec, unreachable(primary(0), 5), a, b))
	if d.Transition != nil || !strings.Contains(d.Waiting.FailoverHeldBack(), "forked") {
		t.Fatalf("forked candidates: want no failover and a reason, got %s", d)
	}
}

func TestNeverElectsAnEmptyRestartedNode(t *testing.T) {
	empty := node(2, RoleReplica, "fresh", 0)
	_, d := failingOver(t, replica(1, 3), empty)
	if d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("want s0-1, got %s", d)
	}
	// Only the empty node is left and the lost primary may still hold the data: wait.
	d = Decide(steadyState(), obsAt(5, testSpec(1), unreachable(primary(0), 5), empty))
	if d.Transition != nil {
		t.Fatalf("want no failover onto an empty node, got %s", d)
	}
}

func TestReseedOnlyWhenEveryNodeIsSeenEmpty(t *testing.T) {
	// The primary restarted empty and so did the only replica: the data is gone whatever
	// the machine does; it starts a new history and says so.
	restarted := node(0, RoleReplica, "fresh0", 0)
	restarted.Valkey.RunID = "run-0-again"
	empty := node(1, RoleReplica, "fresh1", 0)
	spec := testSpec(1)
	d := Decide(steadyState(), obsAt(5, spec, restarted, empty))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost, got %s", d)
	}
	d = Decide(d.Next, obsAt(6, spec, restarted, empty))
	if d.Transition == nil || d.Transition.Event != EventCandidateElected || !d.Next.Op.Election.Reseed || d.Transition.Why.Kind != ReasonReseeded {
		t.Fatalf("want an explicit reseed, got %s", d)
	}
}

// electedAndPromoted is a failover of s0-0 whose elected s0-2 was promoted (history h2
// continuing h1) and is followed by s0-1, before the election is recorded as promoted.
func electedAndPromoted(t *testing.T) (p Persisted, spec Spec, follower, promoted Node) {
	t.Helper()
	_, d := failingOver(t, replica(1, 5), replica(2, 7))
	promoted = detached(replica(2, 7))
	promoted.Valkey.Role, promoted.Valkey.ReplID, promoted.Valkey.ReplID2, promoted.Valkey.SecondOffset = RolePrimary, "h2", "h1", 8
	promoted.Valkey.SyncFenced = false
	follower = replica(1, 5)
	follower.Valkey.PrimaryHost = promoted.Pod.IP
	return d.Next, testSpec(2), follower, promoted
}

func TestFenceTimeoutBeforeOpeningWrites(t *testing.T) {
	p, spec, follower, promoted := electedAndPromoted(t)
	// The old primary is unreachable, not known dead: the new one stays fenced until
	// FenceTimeout after the election (t=6 + 10s).
	d := Decide(p, obsAt(8, spec, unreachable(primary(0), 8), follower, promoted))
	if d.Transition == nil || d.Transition.Event != EventCandidatePromoted {
		t.Fatalf("want candidate-promoted recording h2, got %s", d)
	}
	p = d.Next
	for _, sec := range []int{9, 15} {
		d = Decide(p, obsAt(sec, spec, unreachable(primary(0), 8), follower, promoted))
		if d.Transition != nil || len(actionsOf(d, "open-writes")) > 0 {
			t.Fatalf("t=%d: old primary may still accept writes; got %s", sec, d)
		}
	}
	d = Decide(p, obsAt(16, spec, unreachable(primary(0), 8), follower, promoted))
	if d.Transition == nil || d.Transition.Event != EventFailoverComplete || d.Next.Shards[0].History.ID != "h2" {
		t.Fatalf("t=16: want failover-complete, got %s", d)
	}
	if len(actionsOf(d, "open-writes")) != 1 {
		t.Fatalf("Steady opens the new primary: %s", d)
	}
}

func TestPrimaryRecoveredBeforeElection(t *testing.T) {
	spec := testSpec(2)
	d := Decide(steadyState(), obsAt(5, spec, unreachable(primary(0), 5), replica(1, 5), replica(2, 5)))
	d = Decide(d.Next, obsAt(6, spec, primary(5), detached(replica(1, 5)), detached(replica(2, 5))))
	if d.Transition == nil || d.Transition.Event != EventPrimaryRecovered || d.Next.State != Steady {
		t.Fatalf("want primary-recovered, got %s", d)
	}
}

func TestRedeliveredObservationAddsNoTransition(t *testing.T) {
	spec := testSpec(2)
	obs := obsAt(5, spec, unreachable(primary(0), 5), replica(1, 5), replica(2, 5))
	d := Decide(steadyState(), obs)
	if d.Transition == nil {
		t.Fatal("want primary-lost")
	}
	again := Decide(d.Next, obs)
	if again.Transition != nil {
		t.Fatalf("re-delivered observation caused %s", again.Transition)
	}
	if again.String() != strings.Replace(d.String(), d.Transition.String(), "stay FailingOver", 1) {
		t.Fatalf("re-delivery changed the actions:\n%s\n%s", d, again)
	}
	stale := obsAt(4, spec, unreachable(primary(0), 5), replica(1, 5), replica(2, 5))
	if old := Decide(d.Next, stale); old.Transition != nil || len(old.Actions) > 0 {
		t.Fatalf("an observation older than the last transition must do nothing: %s", old)
	}
}

func TestFailoverPreemptsRolling(t *testing.T) {
	spec := testSpec(2)
	spec.Revision = "r2"
	p := steadyState()
	p.State, p.Op = Rolling, Operation{Roll: Roll{Revision: "r2"}}
	d := Decide(p, obsAt(5, spec, unreachable(primary(0), 5), replica(1, 5), replica(2, 5)))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost || d.Next.Op.Election.Preempted != Rolling {
		t.Fatalf("want primary-lost pre-empting Rolling, got %s (%+v)", d, d.Next.Op)
	}
}

func TestSpecChangeAbortsRolling(t *testing.T) {
	spec := testSpec(2)
	spec.Revision = "r3"
	p := steadyState()
	p.State, p.Op = Rolling, Operation{Roll: Roll{Revision: "r2"}}
	d := Decide(p, obsAt(5, spec, primary(5), replica(1, 5), replica(2, 5)))
	if d.Transition == nil || d.Transition.Event != EventSpecChanged || d.Next.State != Steady || d.Next.Op != (Operation{}) {
		t.Fatalf("want spec-changed to Steady, got %s", d)
	}
}

func TestRollingHandsOverThePrimaryLast(t *testing.T) {
	spec := testSpec(2)
	spec.Revision = "r2"
	p := steadyState()
	p.State, p.Op = Rolling, Operation{Roll: Roll{Revision: "r2"}}
	prim := primary(5)
	r1, r2 := replica(1, 5), replica(2, 5)
	d := Decide(p, obsAt(5, spec, prim, r1, r2))
	if got := actionsOf(d, "roll-pod"); len(got) != 1 || !strings.Contains(got[0], "s0-1") {
		t.Fatalf("want the first replica rolled first, got %s", d)
	}
	r1.Pod.Revision, r2.Pod.Revision = "r2", "r2"
	d = Decide(p, obsAt(6, spec, prim, r1, r2))
	if d.Transition == nil || d.Transition.Event != EventHandOverStarted || d.Next.Op.HandOver.To != "s0-1" {
		t.Fatalf("want the hand-over recorded before it is asked for, got %s", d)
	}
	if got := actionsOf(d, "hand-over"); len(got) != 1 || got[0] != "hand-over s0-0 -> s0-1" {
		t.Fatalf("want hand-over to s0-1, got %s", d)
	}
}

// TestRollingWaitsForTheRolledPodToBeReady: the rolled replica answers, follows the primary
// and has its link up (converged), but its readiness probe has not passed yet: Kubernetes
// counts it down (Services, the PodDisruptionBudget), so the next pod does not roll before it
// is Ready.
func TestRollingWaitsForTheRolledPodToBeReady(t *testing.T) {
	spec := testSpec(2)
	spec.Revision = "r2"
	p := steadyState()
	p.State, p.Op = Rolling, Operation{Roll: Roll{Revision: "r2"}}
	prim := primary(5)
	r1, r2 := replica(1, 5), replica(2, 5)
	r1.Pod.Revision, r1.Pod.Ready = "r2", false
	d := Decide(p, obsAt(5, spec, prim, r1, r2))
	if got := actionsOf(d, "roll-pod"); len(got) > 0 || (d.Waiting.Kind != WaitPodsNotReady || d.Waiting.Detail != "s0-1") {
		t.Fatalf("rolls %v while s0-1 is not Ready (waiting %q)", got, d.Waiting)
	}
	r1.Pod.Ready = true
	d = Decide(p, obsAt(6, spec, prim, r1, r2))
	if got := actionsOf(d, "roll-pod"); len(got) != 1 || !strings.Contains(got[0], "s0-2") {
		t.Fatalf("once s0-1 is Ready, want s0-2 rolled, got %s", d)
	}
}

func TestSwitchoverBecomesStale(t *testing.T) {
	spec := testSpec(2)
	spec.Switchover = &Switchover{Shard: 0, To: "s0-2"}
	d := Decide(steadyState(), obsAt(5, spec, primary(5), replica(1, 5), replica(2, 5)))
	if d.Transition == nil || d.Transition.Event != EventSwitchoverRequested {
		t.Fatalf("want switchover-requested, got %s", d)
	}
	spec.Switchover = &Switchover{Shard: 0, To: "s0-1"}
	d = Decide(d.Next, obsAt(6, spec, primary(5), replica(1, 5), replica(2, 5)))
	if d.Transition == nil || d.Transition.Event != EventSwitchoverStale || d.Next.State != Steady || d.Transition.Why.Kind != ReasonSwitchoverChanged || d.Transition.Why.ToNode != "s0-1" {
		t.Fatalf("want switchover-stale, got %s", d)
	}
}

// A switchover the machine does not take now says why, instead of a request that silently
// does nothing; once the reason is gone it is taken.
func TestASwitchoverThatCannotBeTakenSaysWhy(t *testing.T) {
	spec := testSpec(2)
	spec.Switchover = &Switchover{Shard: 0, To: "s0-2"}
	lagging := replica(2, 5)
	lagging.Valkey.LinkUp = false
	cases := []struct {
		name  string
		nodes []Node
		want  string
	}{
		{"link down", []Node{primary(5), replica(1, 5), lagging}, "s0-2 is not a linked replica of s0-0"},
		{"not answering", []Node{primary(5), replica(1, 5), unreachable(replica(2, 5), 1)}, "s0-2 is not answering"},
		{"syncing", []Node{primary(5), replica(1, 5), node(2, RoleReplica, "h0", 3)}, "s0-2"},
	}
	for _, c := range cases {
		d := Decide(steadyState(), obsAt(5, spec, c.nodes...))
		if d.Transition != nil && d.Transition.Event == EventSwitchoverRequested {
			t.Fatalf("%s: the switchover must wait, got %s", c.name, d)
		}
		if d.Waiting.Kind != WaitSwitchover || !strings.Contains(d.Waiting.Detail, c.want) {
			t.Errorf("%s: waiting = %q, want the switchover's reason (%q)", c.name, d.Waiting, c.want)
		}
	}
	d := Decide(steadyState(), obsAt(5, spec, primary(5), replica(1, 5), replica(2, 5)))
	if d.Transition == nil || d.Transition.Event != EventSwitchoverRequested {
		t.Fatalf("the reason gone, the switchover is taken: got %s", d)
	}
	spec.Switchover = nil
	if d := Decide(steadyState(), obsAt(5, spec, primary(5), replica(1, 5), lagging)); d.Waiting.Kind == WaitSwitchover {
		t.Fatalf("no switchover requested, none waits: %q", d.Waiting)
	}
}

func TestSteadyDemotesAReturningOldPrimary(t *testing.T) {
	p := steadyState()
	p.Shards[0] = ShardRecord{Primary: "s0-1", RunID: "run-1", History: History{ID: "h2", PrevID: "h1", PrevEnd: 6}, Epoch: 2}
	newPrim := node(1, RolePrimary, "h2", 5)
	newPrim.Valkey.WritesFenced, newPrim.Valkey.SyncFenced = false, false
	zombie := primary(9) // the old primary, back, still open for writes
	d := Decide(p, obsAt(5, testSpec(1), zombie, newPrim))
	fence, repoint := actionsOf(d, "fence"), actionsOf(d, "replica-of")
	if len(fence) != 1 || fence[0] != "fence s0-0" || len(repoint) != 1 || !strings.HasPrefix(repoint[0], "replica-of s0-0 -> s0-1") {
		t.Fatalf("want the zombie fenced then demoted, got %s", d)
	}
	if d.Actions[0].Kind() != "fence" {
		t.Fatalf("fence must come before the demotion: %s", d)
	}
}

// electedAfterRestart is a cluster shard of two primaries, s0-0 without slots and s0-1, the
// recorded primary, restarted (a new run id) and back from nodes.conf serving every slot, both
// in history h at offset off holding keys keys: the decision after primary-lost.
func electedAfterRestart(t *testing.T, h string, off, keys int64) Decision {
	t.Helper()
	spec := testSpec(1)
	spec.Mode = ModeCluster
	former := node(0, RolePrimary, h, off)
	owner := node(1, RolePrimary, h, off)
	owner.Valkey.RunID = "run-1-again"
	owner.Valkey.Slots = []SlotRange{{Start: 0, End: NumSlots - 1}}
	for _, n := range []*Node{&former, &owner} {
		n.Valkey.Joined, n.Valkey.WritesFenced, n.Valkey.SyncFenced, n.Valkey.Keys = true, true, true, keys
	}
	p := recordedAt(1, 2)
	p.Shards[0].History = History{ID: "h1"}
	d := Decide(p, obsAt(5, spec, former, owner))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost, got %s", d)
	}
	return Decide(d.Next, obsAt(6, spec, former, owner))
}

// In cluster mode a reseed among equally empty nodes goes to the node that serves the shard's
// slots: s0-1, the recorded primary, restarted empty and back from nodes.conf still serving
// them, against s0-0, a former primary without slots. Promoting s0-0 (a primary already: Promote
// only opens it) left the slots on s0-1, which refuses to follow anyone while it serves them:
// replica-of s0-1 -> s0-0 failed for ever (found by the simulator once it modelled nodes.conf).
func TestClusterReseedGoesToTheNodeThatServesTheSlots(t *testing.T) {
	if d := electedAfterRestart(t, "h-fresh", 0, 0); d.Transition == nil || !d.Next.Op.Election.Reseed || d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("want a reseed on s0-1, which serves the slots, got %s", d)
	}
}

// In cluster mode, among equally complete candidates, the election goes to the node that serves
// the shard's slots: s0-1, the recorded primary, re-created on a new IP with its data and back
// from nodes.conf still serving them, against s0-0, an old primary holding the same data that
// lost its slots to s0-1. Electing s0-0 (a primary: Promote only opens it) left the slots with
// s0-1, which refuses to follow anyone while it serves them (found by the simulator).
func TestClusterElectionAmongEqualsGoesToTheNodeThatServesTheSlots(t *testing.T) {
	if d := electedAfterRestart(t, "h1", 5, 5); d.Transition == nil || d.Next.Op.Election.Reseed || d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("want s0-1, which serves the slots, elected, got %s", d)
	}
}

// A hand-over seen half-way (the CI run caught it on a real FAILOVER TO): the target already
// promoted itself on the recorded history (its ReplID2 is the recorded one) while the old
// primary, finishing the FAILOVER, still says primary. The hand-over may have happened, so it
// is not abandoned as stale (which fenced the new primary and pointed it at the old one); the
// next observation, with the old primary following the target, records the hand-over.
func TestAHandOverSeenHalfWayIsNotAbandoned(t *testing.T) {
	spec := testSpec(2)
	spec.Switchover = &Switchover{Shard: 0, To: "s0-2"}
	d := Decide(steadyState(), obsAt(5, spec, primary(5), replica(1, 5), replica(2, 5)))
	if d.Transition == nil || d.Transition.Event != EventSwitchoverRequested || d.Next.Op.HandOver.To != "s0-2" {
		t.Fatalf("want switchover-requested with the hand-over recorded, got %s (%+v)", d, d.Next.Op)
	}
	p := d.Next
	promoted := promotedBy(replica(2, 5))
	half := Decide(p, obsAt(6, spec, primary(5), replica(1, 5), promoted))
	if half.Transition != nil && half.Transition.Event == EventSwitchoverStale {
		t.Fatalf("a hand-over seen half-way was abandoned: %s", half)
	}
	for _, a := range half.Actions {
		if strings.Contains(a.String(), "s0-2") && (a.Kind() == "fence" || a.Kind() == "replica-of") {
			t.Fatalf("the promoted target is acted on as if the hand-over had not happened: %s", half)
		}
	}
	old := followingAfterHandOver(primary(5), promoted)
	done := Decide(p, obsAt(7, spec, old, replica(1, 5), promoted))
	if done.Transition == nil || done.Next.Shards[0].Primary != "s0-2" {
		t.Fatalf("want the hand-over to s0-2 recorded, got %s", done)
	}
}

// The same half-way hand-over in a roll (the simulator, once FAILOVER TO took it two ticks,
// found the roll fencing the promoted target and pointing it back at the old primary, which
// then followed the target: a loop of failovers). The promoted target is left alone, the roll
// waits, and the hand-over is recorded once the old primary follows it.
func TestARollsHandOverSeenHalfWayIsLeftToFinish(t *testing.T) {
	spec := testSpec(2)
	spec.Revision = "r2"
	p := steadyState()
	p.State, p.Op = Rolling, Operation{Roll: Roll{Revision: "r2"}}
	prim := primary(5)
	r1, r2 := replica(1, 5), replica(2, 5)
	r1.Pod.Revision, r2.Pod.Revision = "r2", "r2"
	d := Decide(p, obsAt(5, spec, prim, r1, r2))
	if d.Next.Op.HandOver.To != "s0-1" {
		t.Fatalf("want the hand-over to s0-1 recorded, got %s", d)
	}
	p = d.Next
	promoted := promotedBy(r1)
	half := Decide(p, obsAt(6, spec, prim, promoted, r2))
	if half.Transition != nil {
		t.Fatalf("a hand-over seen half-way made a transition: %s", half)
	}
	for _, a := range half.Actions {
		if strings.Contains(a.String(), "s0-1") {
			t.Fatalf("the promoted target is acted on: %s", half)
		}
	}
	if w := half.Waiting; w.Kind != WaitHandOverFinishing || w.Node != "s0-1" {
		t.Errorf("the roll does not say it waits for the hand-over: %q", half.Waiting)
	}
	old := followingAfterHandOver(prim, promoted)
	done := Decide(p, obsAt(7, spec, old, promoted, r2))
	if done.Transition == nil || done.Next.Shards[0].Primary != "s0-1" {
		t.Fatalf("want the hand-over to s0-1 recorded, got %s", done)
	}
}

// promotedBy is replica n right after FAILOVER TO promoted it: a primary of history h2 that
// continues h1, opened by the hand-over before it asked (as the real actuator does).
func promotedBy(n Node) Node {
	n.Valkey.Role, n.Valkey.PrimaryHost, n.Valkey.LinkUp = RolePrimary, "", false
	n.Valkey.ReplID, n.Valkey.ReplID2, n.Valkey.SecondOffset = "h2", "h1", 6
	n.Valkey.WritesFenced, n.Valkey.SyncFenced = false, false
	return n
}

// followingAfterHandOver is the old primary once it finished FAILOVER TO: a replica of target.
func followingAfterHandOver(old, target Node) Node {
	old.Valkey.Role, old.Valkey.PrimaryHost, old.Valkey.LinkUp = RoleReplica, target.Pod.IP, true
	old.Valkey.ReplID, old.Valkey.ReplID2 = "h2", "h1"
	return old
}

// TestARecordedRollingHandOverKeepsItsTarget: while the primary pauses writes for FAILOVER TO
// its recorded target, another replica's offset may pass the target's for a moment; the roll
// must not record and ask for a second hand-over beside the first (seen on the real cluster).
// Only a target that is no longer a caught-up replica is replaced.
func TestARecordedRollingHandOverKeepsItsTarget(t *testing.T) {
	spec := testSpec(2)
	spec.Revision = "r2"
	p := steadyState()
	p.State, p.Op = Rolling, Operation{Roll: Roll{Revision: "r2"}, HandOver: HandOverMark{To: "s0-2"}}
	prim, r1, r2 := primary(110), replica(1, 110), replica(2, 100)
	r1.Pod.Revision, r2.Pod.Revision = "r2", "r2"
	d := Decide(p, obsAt(6, spec, prim, r1, r2))
	if d.Transition != nil {
		t.Fatalf("re-targeted the recorded hand-over: %s", d)
	}
	if got := actionsOf(d, "hand-over"); len(got) != 1 || got[0] != "hand-over s0-0 -> s0-2" {
		t.Fatalf("want the recorded hand-over to s0-2, got %s", d)
	}
	r2.Pod.Terminating = true // deleted meanwhile: no hand-over target any more
	d = Decide(p, obsAt(7, spec, prim, r1, r2))
	if d.Transition == nil || d.Transition.Event != EventHandOverStarted || d.Next.Op.HandOver.To != "s0-1" {
		t.Fatalf("want a new target once s0-2 can no longer take over, got %s", d)
	}
}

// TestARollDoesNotDeleteAPodTwice: a pod whose deletion was asked for is terminating (its
// preStop hook, Valkey's shutdown); the roll waits for it instead of deleting it again at every
// turn (each one an API write and an Event).
func TestARollDoesNotDeleteAPodTwice(t *testing.T) {
	spec := testSpec(2)
	spec.Revision = "r2"
	p := steadyState()
	p.State, p.Op = Rolling, Operation{Roll: Roll{Revision: "r2"}}
	r1 := replica(1, 5)
	r1.Pod.Terminating = true
	d := Decide(p, obsAt(5, spec, primary(5), r1, replica(2, 5)))
	if len(actionsOf(d, "roll-pod")) > 0 || (d.Waiting.Kind != WaitRollingPodStopping || d.Waiting.Node != "s0-1") {
		t.Fatalf("want the roll to wait for s0-1 to stop, got %s", d)
	}
}

// TestAnOldPrimaryWithOtherUsersIsNotObservedFenced: the old primary answers again with the
// application user off, but it has users of ValkeyACLs, whom that fence does not stop: it is
// no evidence that it takes no writes, so the new primary opens only after FenceTimeout. With
// no other users the same observation completes the failover at once.
func TestAnOldPrimaryWithOtherUsersIsNotObservedFenced(t *testing.T) {
	p, spec, follower, promoted := electedAndPromoted(t)
	d := Decide(p, obsAt(8, spec, unreachable(primary(0), 8), follower, promoted))
	p = d.Next // candidate-promoted
	old := primary(9)
	old.Valkey.WritesFenced, old.Valkey.OtherUsers = true, true
	d = Decide(p, obsAt(9, spec, old, follower, promoted))
	if d.Transition != nil && d.Transition.Event == EventFailoverComplete {
		t.Fatalf("the application user off does not fence ValkeyACL users: %s", d)
	}
	old.Valkey.OtherUsers = false
	d = Decide(p, obsAt(9, spec, old, follower, promoted))
	if d.Transition == nil || d.Transition.Event != EventFailoverComplete || d.Transition.Why.Fenced != (Fenced{How: FencedObserved}) {
		t.Fatalf("without other users the fenced old primary is evidence: %s", d)
	}
}
