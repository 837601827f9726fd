package machine

import (
	"reflect"
	"testing"
)

// A converged cluster's decision, the commonest by far, allocates nothing: the decider and its
// view come from the pool (a decider per call was half of a simulated step's allocations).
// The bound allows one allocation for a pool emptied by a collection during the count.
func TestConvergedDecisionAllocatesNothing(t *testing.T) {
	if raceDetector {
		t.Skip("under the race detector sync.Pool drops what is put back: counted by the test run without it")
	}
	c := benchCases()[0]
	if n := testing.AllocsPerRun(100, func() { sinkDecision = Decide(c.p, c.obs) }); n > 1 {
		t.Fatalf("a converged decision allocates %.0f times", n)
	}
}

// A pooled decider decides as a new one does, whatever observation it indexed before: a
// decision on many shards, then one on fewer, then the first again.
func TestPooledDecidersForgetTheLastObservation(t *testing.T) {
	cases := benchCases()
	want := make([]Decision, len(cases))
	for i, c := range cases {
		want[i] = Decide(c.p, c.obs)
	}
	wide := obsAt(5, testSpec(2), primary(9), replica(1, 9), replica(2, 9))
	for i := range wide.Nodes {
		n := wide.Nodes[i]
		n.Shard, n.Name = 3, n.Name+"-far"
		wide.Nodes = append(wide.Nodes, n)
	}
	for range 3 {
		Decide(steadyState(), wide)
		for i, c := range cases {
			if got := Decide(c.p, c.obs); !reflect.DeepEqual(got, want[i]) {
				t.Fatalf("case %d decided %s after other decisions, %s at first", i, got, want[i])
			}
		}
	}
}
