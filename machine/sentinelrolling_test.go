package machine

import (
	"strings"
	"testing"
)

// told is ss monitoring the group with the settings sentinelSpec asks for (their quorum: a
// majority of three), which Steady and Rolling would otherwise give them first.
func told(ss []Sentinel) []Sentinel {
	for i := range ss {
		ss[i].Settings = SentinelSettings{Quorum: 2}
	}
	return ss
}

// onRevision is n with its pod on revision rev.
func onRevision(n Node, rev string) Node {
	n.Pod.Revision = rev
	return n
}

// A rollout in the Sentinel topology: the replicas are rolled one at a time, the next only
// once the last one is opened again (a restarted replica comes up at replica-priority 0, which
// the sentinels cannot pick); the primary's step is a hand-over through a sentinel, recorded
// as a planned FailingOver marked as the rollout's; the sentinels' pick is recorded, and
// the rollout resumes from Steady with the old primary, a replica now, rolled last.
func TestSentinelModeRolloutHandsOverThroughASentinel(t *testing.T) {
	spec := sentinelSpec()
	spec.Revision = "r2"
	ss := func() []Sentinel {
		return told(withReplicas(sentinels(0, "", 0), SentinelReplica{IP: "10.0.0.2", Priority: 100}, SentinelReplica{IP: "10.0.0.3", Priority: 100}))
	}
	obs := obsAt(1, spec, primary(10), openReplica(1, 10), openReplica(2, 10))
	obs.Objects.Revision = "r1"
	obs.Sentinels = ss()
	d := Decide(steadyState(), obs)
	if d.Transition == nil || d.Transition.Event != EventRolloutNeeded {
		t.Fatalf("want rollout-needed, got %+v", d.Transition)
	}
	p := d.Next

	// s0-2 was rolled and came back fenced, linked: opened, and s0-1 is not rolled beside it.
	restarted := onRevision(replica(2, 10), "r2")
	obs = obsAt(2, spec, primary(10), openReplica(1, 10), restarted)
	obs.Sentinels = ss()
	d = Decide(p, obs)
	if got := actionsOf(d, "roll-pod"); len(got) != 0 {
		t.Fatalf("rolled %v while s0-2 is still fenced", got)
	}
	if got := actionsOf(d, "open-writes"); len(got) != 1 || got[0] != "open-writes s0-2" {
		t.Fatalf("opened %v, want s0-2", got)
	}

	// Opened: s0-1 is rolled next.
	obs = obsAt(3, spec, primary(10), openReplica(1, 10), onRevision(openReplica(2, 10), "r2"))
	obs.Sentinels = ss()
	d = Decide(p, obs)
	if got := actionsOf(d, "roll-pod"); len(got) != 1 || got[0] != "roll-pod s0-1 to r2" {
		t.Fatalf("rolled %v, want s0-1", got)
	}

	// Both replicas rolled and open: the primary hands over through a sentinel, from a
	// planned FailingOver that keeps the rollout's revision.
	obs = obsAt(4, spec, primary(10), onRevision(openReplica(1, 10), "r2"), onRevision(openReplica(2, 12), "r2"))
	obs.Sentinels = ss()
	d = Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventRollHandOver || d.Transition.To != FailingOver || !d.Next.Op.Election.Planned ||
		!d.Next.Op.Switchover.Rollout || d.Next.Op.Switchover.To != "s0-2" {
		t.Fatalf("want roll-hand-over to s0-2, got %+v, op %+v", d.Transition, d.Next.Op)
	}
	if !strings.Contains(d.Transition.Message, "s0-0 hands over to s0-2 before it is rolled to revision r2") {
		t.Fatalf("message %q", d.Transition.Message)
	}
	if got := actionsOf(d, "hold-back"); len(got) != 1 || got[0] != "hold-back s0-1" {
		t.Fatalf("held back %v, want s0-1", got)
	}
	if got := actionsOf(d, "roll-pod"); len(got) != 0 {
		t.Fatalf("rolled %v before the hand-over", got)
	}
	p = d.Next

	// The sentinels promoted s0-2: recorded, and the rollout resumes from Steady.
	old := replica(0, 14)
	old.Valkey.PrimaryHost, old.Valkey.WritesFenced, old.Valkey.SyncFenced = "10.0.0.3", true, false
	pick := onRevision(node(2, RolePrimary, "h2", 14), "r2")
	pick.Valkey.ReplID2, pick.Valkey.SecondOffset, pick.Valkey.WritesFenced, pick.Valkey.SyncFenced = "h1", 15, false, false
	held := onRevision(openReplica(1, 14), "r2")
	held.Valkey.PrimaryHost, held.Valkey.HeldBack = "10.0.0.3", true
	obs = obsAt(5, spec, old, held, pick)
	obs.Sentinels = told(sentinels(3, "10.0.0.3", 1))
	d = Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventSentinelPromoted || d.Next.Shards[0].Primary != "s0-2" || d.Next.State != Steady ||
		!strings.Contains(d.Transition.Message, "the hand-over to s0-2 before s0-0 is rolled") {
		t.Fatalf("want sentinel-promoted recording s0-2, got %+v", d.Transition)
	}
	p = d.Next

	// Opened again (the old primary, the held-back replica): the rollout starts over and rolls
	// the old primary, the one pod left on r1.
	open0 := openReplica(0, 16)
	open0.Valkey.PrimaryHost = "10.0.0.3"
	open1 := onRevision(openReplica(1, 16), "r2")
	open1.Valkey.PrimaryHost = "10.0.0.3"
	pick.Valkey.Offset = 16
	obs = obsAt(6, spec, open0, open1, pick)
	obs.Sentinels = told(sentinels(3, "10.0.0.3", 1))
	d = Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventRolloutNeeded || !strings.Contains(d.Transition.Message, "roll 1 pod(s)") {
		t.Fatalf("want rollout-needed for the one pod left, got %+v", d.Transition)
	}
	if got := actionsOf(d, "roll-pod"); len(got) != 1 || got[0] != "roll-pod s0-0 to r2" {
		t.Fatalf("rolled %v, want s0-0", got)
	}
}

// A rollout whose primary step finds the sentinels not ready for a hand-over (one does not
// answer) waits in Rolling, said why, and rolls nothing; a rollout is not started while the
// sentinels do not name the recorded primary.
func TestSentinelModeRolloutWaitsForTheSentinels(t *testing.T) {
	spec := sentinelSpec()
	spec.Revision = "r2"
	obs := obsAt(1, spec, primary(10), onRevision(openReplica(1, 10), "r2"), onRevision(openReplica(2, 10), "r2"))
	obs.Sentinels = told(sentinels(0, "", 0))
	obs.Sentinels[1] = Sentinel{Name: "sentinel-1"}
	p := steadyState()
	p.State, p.Op = Rolling, Operation{Roll: Roll{Revision: "r2"}}
	d := Decide(p, obs)
	if d.Transition != nil || len(d.Actions) != 0 || d.Waiting.Kind != WaitSentinelHandOver || !strings.Contains(d.Waiting.String(), "not every sentinel answers") {
		t.Fatalf("transition %+v, actions %v, waiting %q", d.Transition, d.Actions, d.Waiting)
	}

	// Two of three sentinels name another node: no rollout starts.
	obs = obsAt(2, spec, primary(10), openReplica(1, 10), openReplica(2, 10))
	obs.Sentinels = told(sentinels(2, "10.0.0.9", 0))
	d = Decide(steadyState(), obs)
	if d.Transition != nil && d.Transition.Event == EventRolloutNeeded {
		t.Fatalf("a rollout started while the sentinels name another primary: %+v", d.Transition)
	}
}

// A primary's pod deleted in the Sentinel topology is handed over through a sentinel before it
// stops (primary-leaving), as in the Replication topology but carried out by the sentinels.
func TestSentinelModeLeavingPrimaryHandsOver(t *testing.T) {
	spec := sentinelSpec()
	prim := primary(10)
	prim.Pod.Terminating = true
	obs := obsAt(1, spec, prim, openReplica(1, 10), openReplica(2, 8))
	obs.Sentinels = told(withReplicas(sentinels(0, "", 0), SentinelReplica{IP: "10.0.0.2", Priority: 100}, SentinelReplica{IP: "10.0.0.3", Priority: 100}))
	d := Decide(steadyState(), obs)
	if d.Transition == nil || d.Transition.Event != EventPrimaryLeaving || d.Next.Op.Switchover.To != "s0-1" || !d.Next.Op.Switchover.Leaving {
		t.Fatalf("want primary-leaving to s0-1, got %+v", d.Transition)
	}
	if got := actionsOf(d, "hold-back"); len(got) != 1 || got[0] != "hold-back s0-2" {
		t.Fatalf("held back %v, want s0-2", got)
	}
	if got := actionsOf(d, "hand-over"); len(got) != 0 {
		t.Fatalf("the machine's own hand-over %v in the Sentinel topology", got)
	}

	// A replica not opened yet is not the target; with none open, nothing is recorded and
	// Steady says why.
	obs = obsAt(2, spec, prim, replica(1, 10), replica(2, 10))
	obs.Sentinels = told(sentinels(0, "", 0))
	d = Decide(steadyState(), obs)
	if d.Transition != nil && d.Transition.Event == EventPrimaryLeaving {
		t.Fatalf("handed over to a replica at priority 0: %+v", d.Transition)
	}
}

// A scale-down that removes the primary's ordinal in the Sentinel topology waits for the
// sentinels to be ready for the hand-over, and says so: not only that the primary hands over
// first.
func TestSentinelModeScaleDownSaysWhyTheHandOverWaits(t *testing.T) {
	spec := sentinelSpec()
	spec.Replicas = 1
	prim := node(2, RolePrimary, "h1", 10)
	prim.Valkey.WritesFenced, prim.Valkey.SyncFenced = false, false
	follower := func(ord int) Node {
		n := openReplica(ord, 10)
		n.Valkey.PrimaryHost = "10.0.0.3"
		return n
	}
	obs := obsAt(1, spec, follower(0), follower(1), prim)
	obs.Objects.Replicas = 2
	obs.Sentinels = told(withReplicas(sentinels(3, "10.0.0.3", 0), SentinelReplica{IP: "10.0.0.1", Priority: 100}, SentinelReplica{IP: "10.0.0.2", Priority: 100}))
	obs.Sentinels[1] = Sentinel{Name: "sentinel-1"}
	p := Persisted{State: Steady, Seq: 1, Since: at(0), PodsPerShard: 2, Shards: []ShardRecord{{Primary: "s0-2", RunID: "run-2", History: History{ID: "h1"}, Epoch: 1}}}
	d := Decide(p, obs)
	if d.Transition != nil || d.Waiting.Kind != WaitScaleBlocked || !strings.Contains(d.Waiting.String(), "the sentinels are not ready for a hand-over to s0-0: not every sentinel answers") {
		t.Fatalf("transition %+v, waiting %q", d.Transition, d.Waiting)
	}
	// Every sentinel answering: the hand-over starts.
	obs.Sentinels = told(withReplicas(sentinels(3, "10.0.0.3", 0), SentinelReplica{IP: "10.0.0.1", Priority: 100}, SentinelReplica{IP: "10.0.0.2", Priority: 100}))
	if d := Decide(p, obs); d.Transition == nil || d.Transition.Event != EventScaleDownHandOver {
		t.Fatalf("want scale-down-hand-over, got %+v, waiting %q", d.Transition, d.Waiting)
	}
}
