package machine

import "testing"

// TestAPrimaryWhoseContainerRestartedIsLostAtOnce: the primary's container restarted (a new
// container ID) and its new process does not answer yet: the recorded process is gone, so the
// failover starts at once, without probes to count and without a fence wait (the process
// that could take writes is dead). Before, the restart was only seen at the next probe.
func TestAPrimaryWhoseContainerRestartedIsLostAtOnce(t *testing.T) {
	spec := testSpec(2)
	spec.FailureThreshold = 3
	prim := unreachable(primary(100), 1)
	prim.Pod.Running, prim.Pod.Restarted = true, true
	d := Decide(steadyState(), obsAt(5, spec, prim, replica(1, 100), replica(2, 100)))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost || !d.Next.Op.Election.KnownFenced || d.Transition.Why != (Reason{Kind: ReasonPrimaryLost, Fault: PrimaryFault{Kind: FaultContainerRestarted, Primary: "s0-0"}}) {
		t.Fatalf("want primary-lost at the first failed survey, known fenced, got %s (op %+v)", d, d.Next.Op)
	}
	prim.Pod.Restarted = false
	if d := Decide(steadyState(), obsAt(5, spec, prim, replica(1, 100), replica(2, 100))); d.Transition != nil {
		t.Fatalf("one failed probe of a process that did not restart is no loss: %s", d)
	}
}

// TestAKeyCountTieGoesToTheWriter: the recorded primary restarted from its append-only file,
// and another node restarted from one too, long ago, holding as many keys (data of an old
// primary the shard gave up, never resynced). Nothing places either in a history; key counts
// tie. The writer's data is the shard's newest: it is elected, not the lowest ordinal.
func TestAKeyCountTieGoesToTheWriter(t *testing.T) {
	spec := testSpec(2)
	spec.Persistence = true
	p := steadyState()
	p.Shards[0] = ShardRecord{Primary: "s0-1", RunID: "run-1", History: History{ID: "h2", PrevID: "h1", PrevEnd: 4}, Epoch: 2}
	restarted := func(ord int, run, id string, keys int64) Node {
		n := node(ord, RoleReplica, id, 0)
		n.Valkey.RunID, n.Valkey.Keys = run, keys
		return n
	}
	old := restarted(0, "run-0b", "fresh-a", 2)    // an old primary's forked data
	writer := restarted(1, "run-1b", "fresh-b", 2) // the recorded primary, back from its file
	empty := restarted(2, "run-2", "fresh-c", 0)
	d := Decide(p, obsAt(5, spec, old, writer, empty))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost, got %s", d)
	}
	d = Decide(d.Next, obsAt(6, spec, old, writer, empty))
	if d.Transition == nil || d.Transition.Event != EventCandidateElected || d.Next.Shards[0].Primary != "s0-1" {
		t.Fatalf("want the writer s0-1 elected on a key-count tie, got %s", d)
	}
}
