package election

import "testing"

// A deposed pod's data beyond where the line left it is off the line: a node that reaches that
// point holds everything of the line the pod may hold, however many more keys the pod has, and
// the claim made is the reach, not that the node holds all of the pod's data.
func TestADeposedPodIsHeldUpToWhereTheLineLeftIt(t *testing.T) {
	var claims []Containment
	l := New("h2", true, &claims)
	l.Continued([]Link{{ID: "h1", End: 5}})
	line := Candidate{Place: Place{RunID: "n", ID: "h2", PrevID: "h1", PrevEnd: 5, Offset: 6, Keys: 6}}
	deposed := Candidate{Place: Place{RunID: "d", ID: "h9", Keys: 9}, Unmeasured: true, Mark: &Mark{Left: Link{ID: "h2", End: 5}, Keys: 4}}
	holds, estimate := l.Compare(line, deposed)
	if !holds || estimate {
		t.Fatalf("the line's node holds the deposed pod's line part: holds %v estimate %v", holds, estimate)
	}
	for _, c := range claims {
		if c.Of == "d" {
			t.Errorf("claimed to hold all of the deposed pod's data: %+v", c)
		}
	}
	if len(claims) == 0 || claims[0] != (Containment{Holder: "n", ID: "h2", Through: 4}) {
		t.Errorf("claims %+v, want the reach of h2 up to 4", claims)
	}
	if h, _ := l.Compare(deposed, line); h {
		t.Error("the deposed pod holds the line's writes beyond where the line left it")
	}
}

// Against an unmeasured node only key counts tell, and the answer says it is an estimate.
func TestUnmeasuredNodesCompareByKeyCount(t *testing.T) {
	l := New("h1", true, nil)
	a := Candidate{Place: Place{RunID: "a", ID: "x", Keys: 7}, Unmeasured: true}
	b := Candidate{Place: Place{RunID: "b", ID: "h1", Offset: 9, Keys: 6}}
	if holds, estimate := l.Compare(a, b); !holds || !estimate {
		t.Errorf("7 keys against 6: holds %v estimate %v, want an estimate that it holds", holds, estimate)
	}
	if holds, estimate := l.Compare(b, a); holds || !estimate {
		t.Errorf("6 keys against 7: holds %v estimate %v, want an estimate that it does not", holds, estimate)
	}
}
