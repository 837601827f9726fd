package machine

import (
	"strings"
	"testing"
)

// deposedRecord is shard 0 led by s0-1 in h2, which continued h1 below 1 when s0-1 replaced
// s0-0 (elected with no keys), and s0-0 recorded as deposed.
func deposedRecord(resyncing bool) Persisted {
	p := steadyState()
	p.Shards = []ShardRecord{{Primary: "s0-1", RunID: "run-1", History: History{ID: "h2", PrevID: "h1", PrevEnd: 1}, Epoch: 2,
		Deposed: []DeposedPod{{Pod: "s0-0", Keys: 0, Left: HistoryLink{ID: "h1", End: 1}, Resyncing: resyncing, ResyncKeys: 2}}}}
	return p
}

// The simulator's finding (seed 22442 of replication-persistent): s0-0, isolated, took two
// writes its replicas never got, s0-1 was elected to replace it, and s0-0 restarted from its
// append-only file before it was resynced: a fresh ID at offset 0 with 2 keys. s0-1 took a WAIT-acknowledged write
// (s0-2 holds it) and restarted too, with 1 key. By key count s0-0 (2 keys) held everything
// and was elected: the WAIT-acknowledged write was lost. Recorded as deposed, s0-0's data
// reaches into the line no further than s0-1's at its election (no key), which s0-2 holds.
func TestADeposedPrimaryRestartedFromItsFileDoesNotWinByItsWritesOffTheLine(t *testing.T) {
	deposed := fromAppendOnlyFile(0, 2)
	writer := fromAppendOnlyFile(1, 1)
	holder := detached(node(2, RoleReplica, "h2", 1))
	holder.Valkey.ReplID2, holder.Valkey.SecondOffset, holder.Valkey.Keys = "h1", 1, 1
	d := electAfterLoss(t, deposedRecord(false), durableSpec(2), deposed, writer, holder)
	if d.Next.Op.Election.Candidate != "s0-2" {
		t.Fatalf("want s0-2, which holds the line as far as the deposed s0-0 may, got %s", d)
	}
	// Without the record, key counts elect s0-0 (the finding).
	p := deposedRecord(false)
	p.Shards[0].Deposed = nil
	if d := electAfterLoss(t, p, durableSpec(2), deposed, writer, holder); d.Next.Op.Election.Candidate != "s0-0" {
		t.Fatalf("the finding is no longer reproduced without the record: %s", d)
	}
	// Asked to follow and restarted before it was seen on the line, with no more keys than
	// then: it counts as what it was deposed with.
	if d := electAfterLoss(t, deposedRecord(true), durableSpec(2), deposed, writer, holder); d.Next.Op.Election.Candidate != "s0-2" {
		t.Fatalf("want s0-2, s0-0 holding no more keys than when it was asked to follow, got %s", d)
	}
	// With more keys than when it was asked to follow it synced from the line (nothing else
	// gives a fenced node following nothing keys): it is compared as any node restarted from
	// its file (found by the simulator: it held WAIT-acknowledged writes no other node had).
	holder.Valkey.Keys = 1
	deposed.Valkey.Keys = 3
	if d := electAfterLoss(t, deposedRecord(true), durableSpec(2), deposed, writer, holder); d.Next.Op.Election.Candidate != "s0-0" {
		t.Fatalf("want s0-0, synced since its resync was recorded and holding the most, got %s", d)
	}
}

// The deposed pod is recorded at the election with the elected node's keys, gets where the
// line left it at the promotion, is recorded as resyncing before it is asked to follow, and
// is forgotten once it answers with the line's data.
func TestADeposedPrimaryIsRecordedUntilItIsSeenResynced(t *testing.T) {
	spec := durableSpec(2)
	r1, r2 := replica(1, 5), replica(2, 4)
	r1.Valkey.Keys, r2.Valkey.Keys = 5, 4
	_, d := failingOver(t, r1, r2)
	if d.Transition == nil || d.Transition.Event != EventCandidateElected || d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("want s0-1 elected, got %s", d)
	}
	want := DeposedPod{Pod: "s0-0", Keys: 5, Left: HistoryLink{ID: "h1", End: 6}}
	if m, ok := d.Next.Shards[0].deposedOf("s0-0"); !ok || m != want {
		t.Fatalf("want s0-0 recorded as deposed at the election with s0-1's keys and place, got %+v", d.Next.Shards[0].Deposed)
	}
	// Steady, the deposed pod back from its file with writes of its own: its resync is
	// recorded before it is asked to follow, in the same decision.
	p := deposedRecord(false)
	prim := node(1, RolePrimary, "h2", 3)
	prim.Valkey.WritesFenced, prim.Valkey.SyncFenced = false, false
	back := fromAppendOnlyFile(0, 5)
	d = Decide(p, obsAt(20, spec, back, prim))
	if d.Transition == nil || d.Transition.Event != EventDeposedResync || len(actionsOf(d, "replica-of")) != 1 {
		t.Fatalf("want deposed-resync with s0-0 asked to follow, got %s", d)
	}
	if m, _ := d.Next.Shards[0].deposedOf("s0-0"); !m.Resyncing || m.ResyncKeys != 5 {
		t.Fatalf("want s0-0 recorded as resyncing, got %+v", d.Next.Shards[0].Deposed)
	}
	// Without that record no state asks it to follow.
	p.State = Rolling
	if got := converged(p, spec, back, prim); len(got) > 0 {
		t.Fatalf("asked a deposed pod to follow before its resync was recorded: %v", got)
	}
	// Seen on the line: forgotten.
	p = d.Next
	synced := node(0, RoleReplica, "h2", 3)
	synced.Valkey.PrimaryHost, synced.Valkey.LinkUp = prim.Pod.IP, true
	d = Decide(p, obsAt(21, spec, synced, prim))
	if d.Transition == nil || d.Transition.Event != EventDeposedResynced || len(d.Next.Shards[0].Deposed) != 0 {
		t.Fatalf("want deposed-resynced, got %s (%+v)", d, d.Next.Shards[0].Deposed)
	}
}

// converged lists the replica-of actions converge asks for in p.
func converged(p Persisted, spec Spec, nodes ...Node) []string {
	d := &decider{p: p, obs: obsAt(20, spec, nodes...), v: newView(obsAt(20, spec, nodes...))}
	var b actionList
	d.converge(p, 0, true, &b)
	var out []string
	for _, a := range b.actions {
		if a.Kind() == "replica-of" {
			out = append(out, a.String())
		}
	}
	return out
}

// The simulator's finding (seed 3906 of replication-persistent): a hibernation requested
// right after a failover stopped the pods before the deposed s0-0 (5 writes of its own, off
// the line) was resynced; the wake elected it by key count over the replicas holding a
// WAIT-acknowledged write. A hibernation waits for the deposed pods to resync.
func TestHibernationWaitsForADeposedPodToResync(t *testing.T) {
	spec := durableSpec(2)
	spec.Hibernate = true
	p := deposedRecord(true)
	prim := node(1, RolePrimary, "h2", 1)
	prim.Valkey.WritesFenced, prim.Valkey.SyncFenced = false, false
	r := node(2, RoleReplica, "h2", 1)
	r.Valkey.PrimaryHost, r.Valkey.LinkUp = prim.Pod.IP, true
	fork := node(0, RolePrimary, "h1", 5)
	d := Decide(p, obsAt(20, spec, fork, prim, r))
	if d.Transition != nil || (d.Waiting.Kind != WaitHibernate || !strings.Contains(d.Waiting.Detail, "s0-0, deposed by a failover")) {
		t.Fatalf("want the hibernation to wait for s0-0, got %s", d)
	}
}

// The deposed old primary s0-0 had itself been promoted from h1 (h2, with a write of its own);
// the failover elected s0-1, still in h1, and promoted it there (h3): h2 is a sibling of the
// new line. Neither the failover's completion nor the decisions after it may forget s0-0 as
// holding the line's data (found by the simulator, regressions/old-line-beside-the-new-one.sched).
// A review pointed at the moment before candidate-promoted, when the record still holds the
// elected node's history as it was before its promotion; failover-complete (or primary-lost,
// should the promotion fail) comes first there. Making deposed-resynced wait for the failover's
// end instead cost liveness in cluster mode (seed 91000545).
func TestADeposedSiblingOfTheLineIsNotForgotten(t *testing.T) {
	p := steadyState()
	p.State = FailingOver
	p.Shards = []ShardRecord{{Primary: "s0-1", RunID: "run-1", History: History{ID: "h1"}, Epoch: 2,
		Deposed: []DeposedPod{{Pod: "s0-0", Keys: 1, Left: HistoryLink{ID: "h1", End: 2}}}}}
	p.Op = Operation{Election: Election{Shard: 0, Lost: "s0-0", LostRunID: "run-0", Writer: "s0-0", WriterRunID: "run-0", Candidate: "s0-1", KnownFenced: true, ElectedAt: at(1)}}
	old := node(0, RolePrimary, "h2", 2) // promoted from h1 at 1, one write of its own
	old.Valkey.ReplID2, old.Valkey.SecondOffset, old.Valkey.Keys, old.Valkey.WritesFenced = "h1", 2, 2, true
	cand := node(1, RolePrimary, "h3", 1) // promoted: h3 continues h1 at 1
	cand.Valkey.ReplID2, cand.Valkey.SecondOffset, cand.Valkey.Keys, cand.Valkey.WritesFenced = "h1", 2, 1, true
	nodes := []Node{old, cand, detached(node(2, RoleReplica, "h1", 1))}
	for sec := 2; sec < 5; sec++ {
		d := Decide(p, obsAt(sec, durableSpec(2), nodes...))
		if d.Transition != nil && d.Transition.Event == EventDeposedResynced {
			t.Fatalf("forgot the deposed s0-0, a sibling of the line: %s", d)
		}
		if d.Transition != nil {
			p = d.Next
		}
	}
	if p.State != Steady || len(p.Shards[0].Deposed) != 1 {
		t.Fatalf("want Steady with s0-0 still deposed, got %s %+v", p.State, p.Shards[0].Deposed)
	}
}

// The simulator's finding (seed 92004768 of replication-persistent): a replica scaled away
// with writes the others lacked, its claim kept, came back after a failover had given those
// writes up, restarted from its append-only file, and was elected by key count over the
// node holding a WAIT-acknowledged write of the line. An election now deposes the pods whose
// claims are idle with the elected node's place and keys; one deposed before keeps its mark
// while the new line reaches where the old one left it, else takes the new place and the
// fewer keys.
func TestAnElectionDeposesThePodsOfIdleClaims(t *testing.T) {
	spec := testSpec(2)
	elect := func(p Persisted, idle ...Claim) Decision {
		t.Helper()
		r1, r2 := replica(1, 5), replica(2, 4)
		r1.Valkey.Keys, r2.Valkey.Keys = 5, 4
		o := obsAt(5, spec, unreachable(primary(0), 5), r1, r2)
		o.IdleClaims = idle
		d := Decide(p, o)
		if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
			t.Fatalf("want primary-lost, got %s", d)
		}
		o = obsAt(6, spec, unreachable(primary(0), 6), detached(r1), detached(r2))
		o.IdleClaims = idle
		d = Decide(d.Next, o)
		if d.Transition == nil || d.Transition.Event != EventCandidateElected || d.Next.Op.Election.Candidate != "s0-1" {
			t.Fatalf("want s0-1 elected, got %s", d)
		}
		return d
	}
	away := Claim{Name: "s0-3", Shard: 0, Ordinal: 3}
	other := Claim{Name: "s1-3", Shard: 1, Ordinal: 3}
	d := elect(steadyState(), away, other)
	want := DeposedPod{Pod: "s0-3", Keys: 5, Left: HistoryLink{ID: "h1", End: 6}}
	if m, ok := d.Next.Shards[0].deposedOf("s0-3"); !ok || m != want {
		t.Fatalf("want s0-3 deposed with s0-1's keys and place, got %+v", d.Next.Shards[0].Deposed)
	}
	if _, ok := d.Next.Shards[0].deposedOf("s1-3"); ok {
		t.Fatalf("a claim of another shard is deposed: %+v", d.Next.Shards[0].Deposed)
	}
	if d.Transition.Why.Deposed != "s0-3" {
		t.Fatalf("the election does not say it deposed s0-3: %+v", d.Transition.Why)
	}
	if d := elect(steadyState()); len(d.Next.Shards[0].Deposed) != 1 {
		t.Fatalf("with no idle claim only the old primary is deposed, got %+v", d.Next.Shards[0].Deposed)
	}
	// Deposed before, where the new line still reaches: the old, narrower mark stays.
	p := steadyState()
	narrow := DeposedPod{Pod: "s0-3", Keys: 2, Left: HistoryLink{ID: "h1", End: 3}}
	p.Shards[0].Deposed = []DeposedPod{narrow}
	if m, _ := elect(p, away).Next.Shards[0].deposedOf("s0-3"); m != narrow {
		t.Fatalf("want the earlier mark %+v kept, got %+v", narrow, m)
	}
	// Deposed before and recorded as resyncing: that mark bounds nothing (the pod may have
	// synced since), the election's fresh one replaces it.
	p.Shards[0].Deposed = []DeposedPod{{Pod: "s0-3", Keys: 2, Left: HistoryLink{ID: "h1", End: 3}, Resyncing: true, ResyncKeys: 2}}
	if m, _ := elect(p, away).Next.Shards[0].deposedOf("s0-3"); m != (DeposedPod{Pod: "s0-3", Keys: 5, Left: HistoryLink{ID: "h1", End: 6}}) {
		t.Fatalf("want the resyncing mark replaced by the election's, got %+v", m)
	}
	// Deposed before in a history the new line does not reach: the new place, fewer keys.
	p.Shards[0].Deposed = []DeposedPod{{Pod: "s0-3", Keys: 3, Left: HistoryLink{ID: "h0", End: 9}}}
	want = DeposedPod{Pod: "s0-3", Keys: 3, Left: HistoryLink{ID: "h1", End: 6}}
	if m, _ := elect(p, away).Next.Shards[0].deposedOf("s0-3"); m != want {
		t.Fatalf("want %+v, got %+v", want, m)
	}
}

// A deposed pod that already answers with the line's data when another transition fires (here
// a rollout: Valkey made it follow by itself in cluster mode, before any decision asked it) is
// forgotten in that decision: the next one may see it only restarted from its file, its keys
// then counted as what it was deposed with, below the line's writes it synced.
func TestATransitionForgetsADeposedPodAlreadyOnTheLine(t *testing.T) {
	spec := durableSpec(1)
	spec.Revision = "r2"
	prim := node(1, RolePrimary, "h2", 3)
	prim.Valkey.WritesFenced, prim.Valkey.SyncFenced = false, false
	synced := node(0, RoleReplica, "h2", 3)
	synced.Valkey.PrimaryHost, synced.Valkey.LinkUp = prim.Pod.IP, true
	d := Decide(deposedRecord(false), obsAt(20, spec, synced, prim))
	if d.Transition == nil || d.Transition.Event != EventRolloutNeeded {
		t.Fatalf("want rollout-needed, got %s", d)
	}
	if len(d.Next.Shards[0].Deposed) != 0 || !strings.Contains(d.Transition.Message, "no writes off the line") {
		t.Fatalf("want s0-0 forgotten with the rollout, got %+v (%s)", d.Next.Shards[0].Deposed, d.Transition.Message)
	}
}
