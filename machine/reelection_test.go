package machine

import "testing"

// reelectionWorld is a failover whose elected node is lost in turn: s0-0 (the writer, h1) was
// lost; s0-1, back from its append-only file (a fresh ID, 3 keys), was elected by key count over
// s0-2 (h1 at offset 2), which links its history to h1 up to offset 3 and gives s0-0 a mark with
// s0-1's data. Then s0-1 lost its volume (a new process, empty) and s0-0 came back with every
// write it took (h1 at offset 10, fenced).
func reelectionWorld(promoted bool) (Persisted, Observation) {
	elected := History{ID: "fresh-b", PrevID: "h1", PrevEnd: 3, PrevRestarted: true}
	if promoted {
		elected = History{ID: "h9", PrevID: "fresh-b", PrevEnd: 1, Older: [maxOlderLinks]HistoryLink{{ID: "h1", End: 3, Restarted: true}}}
	}
	p := Persisted{State: FailingOver, Seq: 5, Since: at(10), Shards: []ShardRecord{{
		Primary: "s0-1", RunID: "run-1-again", History: elected, Epoch: 2,
		Deposed: []DeposedPod{{Pod: "s0-0", Keys: 3, Left: HistoryLink{ID: "fresh-b", End: 1}}},
	}}}
	p.Op = Operation{Election: Election{Shard: 0, Lost: "s0-0", LostRunID: "run-0", Writer: "s0-0", WriterRunID: "run-0", LostHistory: History{ID: "h1"}, Candidate: "s0-1", Unpromoted: !promoted, KnownFenced: true, ElectedAt: at(10), ElectedClock: ""}}
	writer := node(0, RolePrimary, "h1", 10)
	writer.Valkey.RunID, writer.Valkey.Keys = "run-0-again", 10
	lost := node(1, RoleReplica, "empty-b", 0)
	lost.Valkey.RunID = "run-1-empty"
	replica := node(2, RoleReplica, "h1", 2)
	replica.Valkey.Keys = 2
	return p, obsAt(20, durableSpec(2), writer, lost, replica)
}

// TestAReElectionAfterAnUnpromotedCandidateStartsFromTheLostHistory: the elected node was never
// promoted, so nobody wrote after the writer: the re-election starts from h1 again, the
// writer's mark goes, and the writer (10 writes) is elected, not s0-2 (2). From the history
// recorded for s0-1, h1 beyond offset 3 was off the line and s0-2 was elected (found by the
// simulator: regressions/key-count-line-forgets-the-deposed-writer.sched).
func TestAReElectionAfterAnUnpromotedCandidateStartsFromTheLostHistory(t *testing.T) {
	p, obs := reelectionWorld(false)
	d := Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost for the elected node, got %s", d)
	}
	if why := d.Transition.Why; why.Unpromoted != "s0-1" || why.Writer != "s0-0" {
		t.Errorf("the reason does not say why: %+v", why)
	}
	op := d.Next.Op
	if op.Election.LostHistory.ID != "h1" || op.Election.LostHistory.PrevID != "" || op.Election.Writer != "s0-0" {
		t.Fatalf("the re-election starts from %+v (writer %s), want h1 and the writer s0-0", op.Election.LostHistory, op.Election.Writer)
	}
	if _, marked := d.Next.Shards[0].deposedOf("s0-0"); marked {
		t.Fatalf("the writer keeps the mark of an election never carried out: %+v", d.Next.Shards[0].Deposed)
	}
	// Step on to the election.
	next := Decide(d.Next, obsAt(21, obs.Spec, obs.Nodes...))
	if next.Transition == nil || next.Transition.Event != EventCandidateElected || next.Next.Op.Election.Candidate != "s0-0" {
		t.Fatalf("want s0-0, holding every write, elected; got %s", next)
	}
}

// TestAReElectionAfterAPromotedCandidateKeepsItsHistory: once the elected node's promotion was
// recorded, nodes may have followed its new history: the re-election builds on the record, and
// the writer keeps its mark.
func TestAReElectionAfterAPromotedCandidateKeepsItsHistory(t *testing.T) {
	p, obs := reelectionWorld(true)
	d := Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost for the elected node, got %s", d)
	}
	if why := d.Transition.Why; why.Kind != ReasonPrimaryLost || why.Unpromoted != "" {
		t.Errorf("a promoted node said never promoted: %+v", why)
	}
	if d.Next.Op.Election.LostHistory.ID != "h9" {
		t.Fatalf("the re-election starts from %+v, want the promoted node's recorded history h9", d.Next.Op.Election.LostHistory)
	}
	if _, marked := d.Next.Shards[0].deposedOf("s0-0"); !marked {
		t.Fatalf("the writer lost its mark after a promotion: %+v", d.Next.Shards[0].Deposed)
	}
}

// An election records whether the elected node was a replica (unpromoted until its promotion
// is recorded) or a primary already (a person promoted it: it may have taken writes and been
// followed under its own history, so a re-election after its loss must build on it; found by
// a review).
func TestAnElectionRecordsWhetherTheElectedNodeWasAReplica(t *testing.T) {
	spec := testSpec(2)
	p := steadyState()
	p.State, p.Op = FailingOver, Operation{Election: Election{Shard: 0, Lost: "s0-0", LostRunID: "run-0", Writer: "s0-0", WriterRunID: "run-0", LostHistory: History{ID: "h1"}, KnownFenced: true}}
	gone := unreachable(node(0, RolePrimary, "h1", 0), 5)
	for _, tc := range []struct {
		name       string
		elected    Node
		unpromoted bool
	}{
		{"a replica", detached(replicaOf("h1", 1, 8)), true},
		{"a primary a person promoted", func() Node {
			n := node(1, RolePrimary, "h2", 8)
			n.Valkey.ReplID2, n.Valkey.SecondOffset = "h1", 6
			return n
		}(), false},
	} {
		d := Decide(p, obsAt(20, spec, gone, tc.elected, detached(replicaOf("h1", 2, 5))))
		if d.Transition == nil || d.Transition.Event != EventCandidateElected || d.Next.Op.Election.Candidate != "s0-1" {
			t.Fatalf("%s: want s0-1 elected, got %s", tc.name, d)
		}
		if d.Next.Op.Election.Unpromoted != tc.unpromoted {
			t.Errorf("%s: Unpromoted = %v, want %v", tc.name, d.Next.Op.Election.Unpromoted, tc.unpromoted)
		}
	}
}
