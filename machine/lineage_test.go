package machine

import (
	"fmt"
	"testing"
)

func TestCoversFollowsValkeyPartialResyncRules(t *testing.T) {
	v := func(id string, off int64, id2 string, second int64) Valkey {
		return Valkey{ReplID: id, Offset: off, ReplID2: id2, SecondOffset: second}
	}
	cases := []struct {
		name string
		b, a Valkey
		want bool
	}{
		{"same history, behind", v("h1", 10, "", -1), v("h1", 7, "", -1), true},
		{"same history, ahead", v("h1", 7, "", -1), v("h1", 10, "", -1), false},
		{"empty is in anything", v("h1", 7, "", -1), v("x", 0, "", -1), true},
		{"other history", v("h1", 10, "", -1), v("h9", 3, "", -1), false},
		{"promoted node contains its old history up to the switch", v("h2", 12, "h1", 9), v("h1", 8, "", -1), true},
		{"but not beyond the switch (a fork)", v("h2", 12, "h1", 9), v("h1", 9, "", -1), false},
		{"a promoted node that wrote nothing is judged by its old history", v("h1", 10, "", -1), v("h2", 8, "h1", 9), true},
		{"a promoted node that wrote something is not", v("h1", 10, "", -1), v("h2", 9, "h1", 9), false},
	}
	for _, c := range cases {
		if got := (lineage{}).covers(c.b, c.a); got != c.want {
			t.Errorf("%s: covers = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestLineageFollowsContinuedHistories(t *testing.T) {
	// The record says h1; a hand-over target continued it as h2; a node that followed the
	// target and then restarted reports only h2 (no ReplID2 after a restart).
	target := node(1, RolePrimary, "h2", 12)
	target.Valkey.ReplID2, target.Valkey.SecondOffset = "h1", 10
	restarted := node(2, RoleReplica, "h2", 11)
	stranger := node(3, RoleReplica, "h7", 50)
	d := &decider{v: newView(obsAt(1, testSpec(3), node(0, RoleReplica, "fresh", 0), target, restarted, stranger))}
	l := d.lineage(0, History{ID: "h1"})
	if !l.contains(target.Valkey) || !l.contains(restarted.Valkey) {
		t.Fatalf("h2 continues h1: both nodes are in the lineage (%v)", l.Lineage)
	}
	if l.contains(stranger.Valkey) {
		t.Fatal("h7 continues nothing of h1")
	}
	// Without the target in sight, nothing says where h2 came from.
	d = &decider{v: newView(obsAt(1, testSpec(3), restarted, stranger))}
	if d.lineage(0, History{ID: "h1"}).contains(restarted.Valkey) {
		t.Fatal("h2 alone cannot be tied to h1")
	}
	// The lineage also knows what the record says: h2 came from h1 at 10, so a node of h2
	// contains h1 up to 9.
	l = (&decider{v: newView(obsAt(1, testSpec(1), restarted))}).lineage(0, History{ID: "h2", PrevID: "h1", PrevEnd: 10})
	if !l.covers(restarted.Valkey, Valkey{ReplID: "h1", Offset: 9}) || l.covers(restarted.Valkey, Valkey{ReplID: "h1", Offset: 10}) {
		t.Fatal("h2 contains h1 below 10 and nothing beyond")
	}
}

func TestRecordKeepsTheChainOfContinuedHistories(t *testing.T) {
	prior := History{ID: "h2", PrevID: "h1", PrevEnd: 10}
	// h3 continued h2 at 15: the record keeps h2 and h1 behind it.
	h := History{ID: "h3", PrevID: "h2", PrevEnd: 15}.continuing(prior)
	if links := h.links(); len(links) != 2 || links[1].ID != "h1" {
		t.Fatalf("chain = %+v", links)
	}
	// A node of h1 below 10 is in the lineage of h3, above it is not (a fork).
	d := &decider{v: newView(obsAt(1, testSpec(1)))}
	l := d.lineage(0, h)
	if !l.contains(Valkey{ReplID: "h1", Offset: 9}) || l.contains(Valkey{ReplID: "h1", Offset: 10}) {
		t.Fatal("h1 belongs to the lineage below 10 only")
	}
	if !l.covers(Valkey{ReplID: "h3", Offset: 20}, Valkey{ReplID: "h1", Offset: 9}) {
		t.Fatal("a node of h3 contains h1 below 10")
	}
	// The same history as the record keeps its chain; an unrelated one starts afresh.
	if same := (History{ID: "h2"}).continuing(prior); len(same.links()) != 1 {
		t.Fatalf("same history lost its chain: %+v", same)
	}
	if fresh := (History{ID: "x"}).continuing(prior); len(fresh.links()) != 0 {
		t.Fatalf("unrelated history got a chain: %+v", fresh)
	}
	// The chain is bounded.
	long := History{ID: "a"}
	for i := 0; i < 20; i++ {
		long = History{ID: fmt.Sprintf("n%d", i), PrevID: long.ID, PrevEnd: int64(100 - i)}.continuing(long)
	}
	if n := len(long.links()); n != 1+maxOlderLinks {
		t.Fatalf("chain of %d links", n)
	}
}

// A node still in a history the record left behind belongs to the lineage only below the
// point where it was left, even when that history itself continued one the record also went
// through (found by the simulator: an old primary's writes after the failover made every
// election look forked, and the shard never got a primary again).
func TestLeftBehindHistoryCountsOnlyBelowWhereItWasLeft(t *testing.T) {
	// The record: h2, which continued h1 below 1, which continued h0 below 1.
	rec := History{ID: "h2", PrevID: "h1", PrevEnd: 1, Older: [maxOlderLinks]HistoryLink{{ID: "h0", End: 1}}}
	oldPrimary := node(0, RoleReplica, "h1", 2) // two writes in h1 after h2 left it at 1
	oldPrimary.Valkey.ReplID2, oldPrimary.Valkey.SecondOffset = "h0", 1
	behind := node(1, RoleReplica, "h1", 0)
	newer := node(2, RoleReplica, "h2", 1)
	d := &decider{v: newView(obsAt(1, testSpec(2), oldPrimary, behind, newer))}
	l := d.lineage(0, rec)
	if l.contains(oldPrimary.Valkey) || l.has("h1") {
		t.Fatalf("h1 beyond offset 1 is off the line: %v", l.Lineage)
	}
	if !l.contains(behind.Valkey) || !l.contains(newer.Valkey) {
		t.Fatal("h1 below 1 and h2 are the shard's line")
	}
}

// A node on its own in the history of the restarted lost primary (which is trusted by offset
// and seeds the lineage with its history) is trusted by offset as well: it was found stuck as
// a "fork" against a returning old primary's prefix once both had restarted and forgotten
// where that history came from.
func TestNodeInATrustedHistoryIsComparedByOffset(t *testing.T) {
	// Recorded: s0-2 in h5 (continuing h4 below 2). s0-2 handed over to s0-3 (h7) behind the
	// machine's back; both restarted, so nobody says h7 continues h5.
	p := steadyState()
	p.Shards[0] = ShardRecord{Primary: "s0-2", RunID: "run-2", History: History{ID: "h5", PrevID: "h4", PrevEnd: 2}, Epoch: 2}
	old := node(0, RoleReplica, "h4", 1) // a returning old primary, a prefix of the line
	lost := node(2, RoleReplica, "h7", 1)
	lost.Valkey.RunID = "run-2-again"
	target := node(3, RoleReplica, "h7", 2)
	spec := testSpec(3)
	d := Decide(p, obsAt(5, spec, old, replica(1, 1), lost, target))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost, got %s", d)
	}
	d = Decide(d.Next, obsAt(6, spec, old, detached(replica(1, 1)), lost, target))
	if d.Next.Op.Election.Candidate != "s0-3" {
		t.Fatalf("want s0-3, the most advanced node of the trusted history, got %s", d)
	}
}

// After a restore, a node holding data from before it (a volume a scale-down left behind and
// a scale-up brought back) is not trusted by offset, however much it holds: found by the
// simulator electing such a node and losing the writes acknowledged since the restore.
func TestDataFromBeforeARestoreIsNotTrustedByOffset(t *testing.T) {
	p := steadyState()
	p.Restored = "restore-1"
	withSnapshot := func(n Node) Node { n.Valkey.Snapshot = "restore-1"; return n }
	prim := withSnapshot(primary(3))
	stale := node(2, RoleReplica, "old", 50) // on its own, history unknown, 50 writes
	spec := testSpec(2)
	d := Decide(p, obsAt(5, spec, unreachable(prim, 5), withSnapshot(replica(1, 3)), stale))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost, got %s", d)
	}
	d = Decide(d.Next, obsAt(6, spec, unreachable(prim, 6), withSnapshot(detached(replica(1, 3))), stale))
	if d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("want s0-1, which holds the restored line, got %s", d)
	}
	// Without the restore the same node would be trusted (its history is unplaceable).
	p.Restored = ""
	d = Decide(p, obsAt(5, spec, unreachable(prim, 5), withSnapshot(replica(1, 3)), stale))
	d = Decide(d.Next, obsAt(6, spec, unreachable(prim, 6), withSnapshot(detached(replica(1, 3))), stale))
	if d.Next.Op.Election.Candidate != "s0-2" {
		t.Fatalf("want s0-2 trusted by offset without a restore, got %s", d)
	}
}

// After a restore, the lost primary back from its append-only file (a fresh ID, which no
// restore's history names, so the observer marks no snapshot) still holds the line's data:
// it was recorded after the restore. Left out, a replica holding less was promoted and the
// old primary resynced from it (the simulator, seed 96007213 of replication-persistent). A
// node on its own that is not the lost primary still needs the mark.
func TestTheLostPrimaryBackFromItsFileCountsAfterARestore(t *testing.T) {
	p := steadyState()
	p.Restored = "restore-1"
	spec := durableSpec(2)
	back := fromAppendOnlyFile(0, 2)
	line := detached(replica(1, 1))
	line.Valkey.Keys, line.Valkey.Snapshot = 1, "restore-1"
	d := Decide(p, obsAt(5, spec, unreachable(primary(0), 5), line))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost, got %s", d)
	}
	d = Decide(d.Next, obsAt(6, spec, back, line))
	if d.Transition == nil || d.Transition.Event != EventCandidateElected || d.Next.Op.Election.Candidate != "s0-0" {
		t.Fatalf("want s0-0, the lost primary back with 2 keys against 1, got %s", d)
	}
	// The same data on another pod (not the lost primary) is not trusted without the mark.
	other := fromAppendOnlyFile(2, 2)
	d = Decide(p, obsAt(5, spec, unreachable(primary(0), 5), line, other))
	d = Decide(d.Next, obsAt(6, spec, unreachable(primary(0), 6), line, other))
	if d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("want s0-1, which holds the restored line, over an unmarked node on its own, got %s", d)
	}
}

// A node handed the primary role twice behind the machine's back (FAILOVER TO to it, then
// back) names only the history in between as its parent, which nobody can place: it holds
// the shard's newest writes and is compared by offset, even though, demoted by FAILOVER TO,
// its client writes were never fenced. Found by the simulator promoting a node behind it.
func TestTwiceHandedOverNodeIsComparedByOffset(t *testing.T) {
	p := steadyState()
	p.Shards[0].History = History{ID: "h4", PrevID: "h1", PrevEnd: 1}
	restarted := node(0, RoleReplica, "fresh", 0) // the recorded primary, restarted empty
	restarted.Valkey.RunID = "run-0-again"
	twice := detached(replica(1, 1))
	twice.Valkey.ReplID, twice.Valkey.ReplID2, twice.Valkey.SecondOffset = "h6", "h5", 2
	twice.Valkey.WritesFenced, twice.Valkey.SyncFenced = false, false
	behind := node(2, RoleReplica, "h4", 0)
	spec := testSpec(2)
	d := Decide(p, obsAt(5, spec, restarted, twice, behind))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost, got %s", d)
	}
	d = Decide(d.Next, obsAt(6, spec, restarted, twice, behind))
	if d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("want s0-1, which holds the newest writes, got %s", d)
	}
}

// A key-count link (an append-only restart elected by key count) starts its history's offsets
// again at 0, so a later link's offset must not clamp how far it reaches into the history it
// continues (found by the simulator, regressions/key-count-link-not-clamped-by-a-later-promotion: clamped to
// 1, a detached node at offset 2 of the older history fell out of the candidates and a node
// holding one write was promoted alone over its two).
func TestAKeyCountLinkIsNotClampedByALaterPromotion(t *testing.T) {
	// The record: h3, promoted from h2 at 1; h2 is a restarted node's fresh history elected
	// by key count over nodes of h1 that reached offset 2 (so h2 holds h1 below 3).
	rec := History{ID: "h3", PrevID: "h2", PrevEnd: 1, Older: [maxOlderLinks]HistoryLink{{ID: "h1", End: 3, Restarted: true}}}
	detachedNode := node(2, RoleReplica, "h1", 2)
	d := &decider{v: newView(obsAt(1, testSpec(2), detachedNode))}
	l := d.lineage(0, rec)
	if !l.contains(detachedNode.Valkey) {
		t.Fatalf("h1 below 3 is the shard's line: prefixes %+v", l.Lineage)
	}
	if l.contains(Valkey{ReplID: "h1", Offset: 3}) {
		t.Fatal("h1 from 3 on is not: the election saw no node of it there")
	}
	if !l.covers(Valkey{ReplID: "h3", Offset: 0}, detachedNode.Valkey) {
		t.Fatal("every node of h3 holds h2's starting data, so h1 below 3")
	}
	// Across a promotion's link offsets run on: the same chain without the mark holds h1
	// only as far as h3's offset reached h2.
	rec.Older[0].Restarted = false
	if (&decider{v: newView(obsAt(1, testSpec(2), detachedNode))}).lineage(0, rec).contains(detachedNode.Valkey) {
		t.Fatal("without the mark the link is a promotion's, clamped at 1")
	}
}

// The restarted mark survives the record's chain being extended.
func TestTheChainKeepsTheRestartedMark(t *testing.T) {
	prior := History{ID: "h2", PrevID: "h1", PrevEnd: 3, PrevRestarted: true}
	h := History{ID: "h3", PrevID: "h2", PrevEnd: 1}.continuing(prior)
	links := h.links()
	if len(links) != 2 || links[0].Restarted || !links[1].Restarted {
		t.Fatalf("chain = %+v", links)
	}
}

// A key-count election's link reaches as far as the nodes it was weighed against, those still
// in a history the lost one continued by promotion too: offsets run on across a promotion.
// Counting only the lost history's own nodes left a replica in the history before the lost
// primary's promotion off the line, and a later election promoted a node holding fewer of
// the line's writes (found by the simulator, regressions/key-count-link-reaches-the-history-before-a-promotion.sched).
func TestAKeyCountLinkReachesTheNodesOfTheHistoryBeforeAPromotion(t *testing.T) {
	// h2 is the lost primary's history, promoted from h1 at 2; s0-3 stayed in h1 at 2.
	lostHistory := History{ID: "h2", PrevID: "h1", PrevEnd: 3}
	p := steadyState()
	p.Shards[0] = ShardRecord{Primary: "s0-1", RunID: "run-1", History: lostHistory, Epoch: 2}
	p.State = FailingOver
	p.Op = Operation{Election: Election{Shard: 0, Lost: "s0-1", LostRunID: "run-1", LostHistory: lostHistory, Writer: "s0-1", WriterRunID: "run-1"}}
	emptied := node(1, RoleReplica, "h9", 0) // the lost primary, back empty
	emptied.Valkey.RunID = "run-1-again"
	elected := node(2, RoleReplica, "h7", 0) // back from its append-only file: 3 keys, no place
	elected.Valkey.RunID, elected.Valkey.Keys = "run-2-again", 3
	behind := detached(node(3, RoleReplica, "h1", 2))
	behind.Valkey.Keys = 2
	spec := testSpec(3)
	spec.Persistence = true
	obs := obsAt(5, spec, node(0, RoleReplica, "h8", 0), emptied, elected, behind)
	d := &decider{p: p, obs: obs, v: newView(obs)}
	h := d.electedHistory(p.Op, d.v.node("s0-2"))
	if h.PrevID != "h2" || !h.PrevRestarted || h.PrevEnd < 3 {
		t.Fatalf("the key-count link is %+v, want h2 reached to at least 3 (s0-3's offset 2 runs on into h2)", h)
	}
	if l := d.lineage(0, History{ID: "h10", PrevID: h.ID, PrevEnd: 1}.continuing(h)); !l.contains(behind.Valkey) {
		t.Fatalf("s0-3, passed over by key count, fell out of the line: prefixes %+v", l.Lineage)
	}
}

// A node of the history before the promotion counts only up to where the lost history left
// it: beyond are writes off the line, which must not stretch the link (found by a review).
func TestAKeyCountLinksReachStopsWhereTheLineLeftAHistory(t *testing.T) {
	op := Operation{Election: Election{LostHistory: History{ID: "h2", PrevID: "h1", PrevEnd: 3}}}
	beyond := node(3, RoleReplica, "h1", 10)
	onLine := node(2, RoleReplica, "h2", 5)
	if got := lostHistoryReach(op, []candidate{{Node: &beyond}}); got != 3 {
		t.Fatalf("reach %d from a node of h1 at 10, want 3 (h2 left h1 at 3)", got)
	}
	if got := lostHistoryReach(op, []candidate{{Node: &beyond}, {Node: &onLine}}); got != 6 {
		t.Fatalf("reach %d, want 6 (the node of h2 at 5)", got)
	}
}

// A history that continued one the line left behind, at the point where the line left it (a
// sibling of the line: the old primary's history that a failover passed over), holds the
// line's data only at its start: its writes are off the line. Across a key-count link the
// line's end cannot say so, and the sibling is weighed as before (by key count).
func TestASiblingOfTheLineIsOnItOnlyAtItsStart(t *testing.T) {
	rec := History{ID: "h3", PrevID: "h1", PrevEnd: 2}
	sibling := node(0, RolePrimary, "h2", 2) // promoted from h1 at 1, one write of its own
	sibling.Valkey.ReplID2, sibling.Valkey.SecondOffset = "h1", 2
	atStart := sibling
	atStart.Valkey.Offset = 1
	d := &decider{v: newView(obsAt(1, testSpec(2), sibling))}
	l := d.lineage(0, rec)
	if l.contains(sibling.Valkey) {
		t.Fatalf("h2's write taken for the line's: prefixes %+v", l.Lineage)
	}
	if !l.contains(atStart.Valkey) {
		t.Fatal("h2 at its start holds h1 below 2, the line's data")
	}
	if d.onTheLine(0, ShardRecord{History: rec}, d.v.node("s0-0")) {
		t.Fatal("a deposed pod holding h2's write would be forgotten as resynced")
	}
	rec.PrevRestarted = true
	if !d.lineage(0, rec).contains(sibling.Valkey) {
		t.Fatal("beside a key-count link the sibling is weighed, not dropped")
	}
}

// A key-count link's child held, at offset 0, the parent up to End and an unmeasured part of
// the shard's line beyond it: a node that left the parent at End by a hand-over behind the
// machine's back may have its writes there, and only key counts can say (found by the
// simulator, regressions/hand-over-beside-a-key-count-link: the node elected by key count had
// held the hand-over target's write; the replica that went on from it with a WAIT-acknowledged
// write was taken for a fork of a node of the target's history, and the shard waited for good).
func TestAHandOverBesideAKeyCountLinkIsWeighedByKeys(t *testing.T) {
	// The record: h9, promoted from h8 at 0; h8 is a restarted node's fresh history elected
	// by key count, holding h5 below 3. h6 is a hand-over target's history, which left h5 at 3.
	rec := History{ID: "h9", PrevID: "h8", PrevEnd: 1, Older: [maxOlderLinks]HistoryLink{{ID: "h5", End: 3, Restarted: true}}}
	p := steadyState()
	p.Shards[0] = ShardRecord{Primary: "s0-0", RunID: "run-0", History: rec, Epoch: 3}
	lost := node(0, RoleReplica, "h11", 0) // the primary, back from its append-only file
	lost.Valkey.RunID, lost.Valkey.Keys = "run-0-again", 3
	target := detached(node(1, RoleReplica, "h6", 4)) // one write of the hand-over target
	target.Valkey.ReplID2, target.Valkey.SecondOffset, target.Valkey.Keys = "h5", 3, 4
	ahead := detached(node(2, RoleReplica, "h9", 2)) // two writes of h9 (WAIT-acknowledged)
	ahead.Valkey.Keys = 5
	spec := testSpec(2)
	spec.Persistence = true
	d := Decide(p, obsAt(5, spec, lost, target, ahead))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost, got %s", d)
	}
	d = Decide(d.Next, obsAt(6, spec, lost, target, ahead))
	if d.Next.Op.Election.Candidate != "s0-2" || d.Transition.Why.OverByKeys != "s0-0,s0-1" {
		t.Fatalf("want s0-2, which holds the most keys, elected over s0-1 by key count, got %s", d)
	}

	l := (&decider{v: newView(obsAt(6, spec, lost, target, ahead))}).lineage(0, rec)
	holds := func(c, o Valkey) (bool, bool) {
		return l.compare(candidate{Node: &Node{Valkey: c}}, candidate{Node: &Node{Valkey: o}})
	}
	// Fewer keys than the hand-over's node: h9 cannot be said to hold it.
	fewer := ahead.Valkey
	fewer.Keys = 3
	if h, est := holds(fewer, target.Valkey); h || !est {
		t.Fatalf("fewer keys: holds %v (by key count %v), want not, by key count", h, est)
	}
	// Nothing written in h9 since its start: the hand-over's node may hold all of it.
	start := ahead.Valkey
	start.Offset, start.Keys = 0, 3
	if h, est := holds(target.Valkey, start); !h || !est {
		t.Fatalf("h9 at its start: held %v (by key count %v), want held, by key count", h, est)
	}
	// Written since: those writes are in h9 only, whatever the key counts.
	if h, _ := holds(target.Valkey, ahead.Valkey); h {
		t.Fatal("a node beside h9 cannot hold what h9 wrote after its start")
	}
	// A node that left h5 before 3 and wrote on its own way is a fork: h8 holds h5's writes
	// past that point.
	early := target.Valkey
	early.SecondOffset = 2
	if h, _ := holds(ahead.Valkey, early); h {
		t.Fatal("a node that left h5 before the link's end is a fork")
	}

	// Every key-count link on the line counts, not only the nearest: h8 elected by key count
	// again after a restart of h7's node at its start (regressions/hand-over-beside-two-key-count-links).
	rec.Older = [maxOlderLinks]HistoryLink{{ID: "h7", End: 1, Restarted: true}, {ID: "h5", End: 3, Restarted: true}}
	l = (&decider{v: newView(obsAt(6, spec, lost, target, ahead))}).lineage(0, rec)
	if h, est := holds(ahead.Valkey, target.Valkey); !h || !est {
		t.Fatalf("two links up: holds %v (by key count %v), want held, by key count", h, est)
	}
	if h, est := holds(target.Valkey, start); !h || !est {
		t.Fatalf("two links up, h9 at its start: held %v (by key count %v), want held, by key count", h, est)
	}
}
