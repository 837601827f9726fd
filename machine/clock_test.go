package machine

import "testing"

// Clocks of different operator incarnations (a new leader, a restarted operator) are never
// compared: a clock behind the last transition must not stall the machine, and a clock ahead
// must not end the fence wait early.

func TestANewLeaderWhoseClockIsBehindStillFailsOver(t *testing.T) {
	p := steadyState()
	p.Since, p.Clock = at(100), "A"
	gone := unreachable(primary(10), 1)
	gone.Pod.Exists = false
	spec := testSpec(2)
	// The same clock, earlier than the last transition: a stale observation.
	if d := Decide(p, Observation{Time: at(50), Clock: "A", Spec: spec, Objects: obsAt(0, spec).Objects, Nodes: []Node{gone, replica(1, 10), replica(2, 10)}}); d.Transition != nil || d.Waiting.IsZero() {
		t.Fatalf("an older observation of the same clock was not taken as stale: %s", d)
	}
	// Another clock, behind: the machine decides.
	d := Decide(p, Observation{Time: at(50), Clock: "B", Spec: spec, Objects: obsAt(0, spec).Objects, Nodes: []Node{gone, replica(1, 10), replica(2, 10)}})
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost || d.Next.Clock != "B" || !d.Next.Since.Equal(at(50)) {
		t.Fatalf("a new leader whose clock is behind did not fail over: %s", d)
	}
}

func TestAClockAheadDoesNotEndTheFenceWaitEarly(t *testing.T) {
	spec := testSpec(2) // FenceTimeout 10 s
	p := Persisted{State: FailingOver, Seq: 3, Since: at(10), Clock: "A",
		Shards: []ShardRecord{{Primary: "s0-1", RunID: "run-1", History: History{ID: "h2", PrevID: "h1", PrevEnd: 11}, Epoch: 2}},
		Op:     Operation{Election: Election{Shard: 0, Lost: "s0-0", LostRunID: "run-0", Writer: "s0-0", WriterRunID: "run-0", LostHistory: History{ID: "h1"}, Candidate: "s0-1", ElectedAt: at(10), ElectedClock: "A"}}}
	isolated := unreachable(primary(10), 5) // its pod runs: it may still accept writes
	promoted := node(1, RolePrimary, "h2", 11)
	promoted.Valkey.ReplID2, promoted.Valkey.SecondOffset, promoted.Valkey.SyncFenced = "h1", 11, false
	follower := node(2, RoleReplica, "h2", 11)
	follower.Valkey.PrimaryHost, follower.Valkey.LinkUp = promoted.Pod.IP, true
	nodes := []Node{isolated, promoted, follower}
	obs := func(sec int, clock string) Observation {
		return Observation{Time: at(sec), Clock: clock, Spec: spec, Objects: obsAt(0, spec).Objects, Nodes: nodes}
	}
	// On the election's own clock the wait ends after FenceTimeout.
	if d := Decide(p, obs(21, "A")); d.Transition == nil || d.Transition.Event != EventFailoverComplete {
		t.Fatalf("on the same clock the fence timeout should have passed: %s", d)
	}
	// A new incarnation whose clock reads 100 s cannot tell how long ago the election was.
	d := Decide(p, obs(100, "B"))
	if d.Transition == nil || d.Transition.Event != EventFenceClockRestarted || !d.Next.Op.Election.ElectedAt.Equal(at(100)) || d.Next.Op.Election.ElectedClock != "B" {
		t.Fatalf("the fence wait did not restart on the new clock: %s", d)
	}
	if d2 := Decide(d.Next, obs(105, "B")); d2.Transition != nil {
		t.Fatalf("the fence ended before FenceTimeout on the new clock: %s", d2)
	}
	if d2 := Decide(d.Next, obs(110, "B")); d2.Transition == nil || d2.Transition.Event != EventFailoverComplete {
		t.Fatalf("the failover did not complete FenceTimeout after the restart on the new clock: %s", d2)
	}
	// Evidence needs no clock: the old primary's pod is gone.
	gone := isolated
	gone.Pod.Exists = false
	nodes[0] = gone
	if d := Decide(p, obs(100, "B")); d.Transition == nil || d.Transition.Event != EventFailoverComplete {
		t.Fatalf("with the old primary gone the new leader should complete at once: %s", d)
	}
}
