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
		t.Fatalf("h2 continues h1: both nodes are in the lineage (%v)", l.ids)
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
