package machine

import "testing"

// The recorded primary handed its role over to s0-1 and took it back between two surveys
// (FAILOVER TO both ways): the same process serves h3, promoted from s0-1's h2 at offset 40,
// and nobody names h1 any more. The record continues h1 through h2; a hand-over from it
// afterwards is then recognised half-way (its target names h3) instead of the target being
// fenced as a stray primary (found by the simulator,
// sim/testdata/regressions/handed-over-and-back-unseen.sched).
func TestARoleTakenBackUnseenIsRecordedAndTheNextHandOverRecognised(t *testing.T) {
	spec := testSpec(2)
	p := steadyState() // s0-0, run-0, h1
	back := primary(50)
	back.Valkey.ReplID, back.Valkey.ReplID2, back.Valkey.SecondOffset = "h3", "h2", 41
	d := Decide(p, obsAt(5, spec, back, replicaOf("h3", 1, 50), replicaOf("h3", 2, 50)))
	if d.Transition == nil || d.Transition.Event != EventHistoryTakenBack || d.Next.State != Steady {
		t.Fatalf("want history-taken-back in Steady, got %s", d)
	}
	h := d.Next.Shards[0].History
	if links := h.links(); h.ID != "h3" || len(links) != 2 || links[0] != (HistoryLink{ID: "h2", End: 41}) || links[1] != (HistoryLink{ID: "h1", End: 41}) {
		t.Fatalf("want h3 continuing h2 and h1 below 41, got %+v", h)
	}
	// A rolling step's hand-over to s0-1 half-way: s0-1 promoted itself on h3 while s0-0 still
	// says primary.
	p = d.Next
	p.State, p.Op = Rolling, Operation{Roll: Roll{Revision: "r2"}, HandOver: HandOverMark{Shard: 0, To: "s0-1"}}
	rolling := spec
	rolling.Revision = "r2"
	target := replicaOf("h4", 1, 50)
	target.Valkey.Role, target.Valkey.PrimaryHost, target.Valkey.ReplID2, target.Valkey.SecondOffset = RolePrimary, "", "h3", 51
	target.Pod.Revision = "r2"
	d = Decide(p, obsAt(6, rolling, back, target, replicaOf("h3", 2, 50)))
	if got := append(actionsOf(d, "fence"), actionsOf(d, "replica-of")...); len(got) > 0 {
		t.Fatalf("the hand-over's target was taken for a stray primary: %v (%s)", got, d)
	}
}

// A primary whose history was promoted from the recorded one itself (a hand-over it began and
// abandoned once it had turned replica): recorded as continuing it directly, so that the next
// hand-over's target, which names the new history, is recognised (found by a review).
func TestAPromotionFromTheRecordedHistoryIsRecordedToo(t *testing.T) {
	p := steadyState()
	n := primary(50)
	n.Valkey.ReplID, n.Valkey.ReplID2, n.Valkey.SecondOffset = "h2", "h1", 41
	d := Decide(p, obsAt(5, testSpec(2), n, replicaOf("h2", 1, 50), replicaOf("h2", 2, 50)))
	if d.Transition == nil || d.Transition.Event != EventHistoryTakenBack {
		t.Fatalf("want history-taken-back, got %s", d)
	}
	if h := d.Next.Shards[0].History; h.ID != "h2" || h.PrevID != "h1" || h.PrevEnd != 41 || h.Older[0].ID != "" {
		t.Fatalf("want h2 continuing h1 below 41 and nothing else, got %+v", h)
	}
}
