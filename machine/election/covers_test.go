package election

import "testing"

// A promotion continues the old history: the promoted node's line holds the old history up to
// where it left it, and no further (a node of the old history beyond that point is a fork).
func TestCoversAcrossAPromotion(t *testing.T) {
	l := New("h2", false, nil)
	l.Continued([]Link{{ID: "h1", End: 11}})
	promoted := Place{RunID: "p", ID: "h2", PrevID: "h1", PrevEnd: 11, Offset: 14, Keys: 14}
	cases := []struct {
		name string
		a    Place
		want bool
	}{
		{"a replica of h1 behind the point", Place{RunID: "r", ID: "h1", Offset: 7, Keys: 7}, true},
		{"a replica of h1 at the point", Place{RunID: "r", ID: "h1", Offset: 10, Keys: 10}, true},
		{"the old primary beyond the point", Place{RunID: "o", ID: "h1", Offset: 12, Keys: 12}, false},
		{"a replica of h2 behind", Place{RunID: "r", ID: "h2", PrevID: "h1", PrevEnd: 11, Offset: 12, Keys: 12}, true},
		{"a replica of h2 ahead", Place{RunID: "r", ID: "h2", PrevID: "h1", PrevEnd: 11, Offset: 15, Keys: 15}, false},
		{"an empty node", Place{RunID: "e", ID: "h9"}, true},
		{"a stranger", Place{RunID: "s", ID: "h9", Offset: 3, Keys: 3}, false},
	}
	for _, c := range cases {
		if got := l.Covers(promoted, c.a); got != c.want {
			t.Errorf("%s: covers %v, want %v", c.name, got, c.want)
		}
	}
}

// Every containment the lineage asserts is collected, and one that rests on a key-count link
// (a restarted node elected by its key count) is marked as an estimate.
func TestClaimsAreCollectedAndEstimatesMarked(t *testing.T) {
	var claims []Containment
	l := New("h2", true, &claims)
	l.Continued([]Link{{ID: "h1", End: 6, Restarted: true}})
	child := Place{RunID: "c", ID: "h2", Offset: 3, Keys: 9}
	if !l.Covers(child, Place{RunID: "r", ID: "h2", Offset: 2, Keys: 8}) {
		t.Fatal("h2 at 3 covers h2 at 2")
	}
	if !l.Covers(child, Place{RunID: "o", ID: "h1", Offset: 4, Keys: 4}) {
		t.Fatal("h2's nodes hold h1 up to the key-count link's end")
	}
	want := []Containment{
		{Holder: "c", ID: "h2", Through: 2},
		{Holder: "c", Of: "r"},
		{Holder: "c", ID: "h1", Through: 4, Estimate: true},
		{Holder: "c", Of: "o", Estimate: true},
	}
	if len(claims) != len(want) {
		t.Fatalf("claims %+v, want %+v", claims, want)
	}
	for i := range want {
		if claims[i] != want[i] {
			t.Errorf("claim %d: %+v, want %+v", i, claims[i], want[i])
		}
	}
}
