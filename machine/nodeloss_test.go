package machine

import (
	"strings"
	"testing"
)

// A node that held the primary and a replica is lost (fewer nodes than pods): the replica
// left may lack writes acknowledged with WAIT 1 that only the lost replica has. The machine
// waits, says why and what the user can do; named in failover-without, the lost replica is
// given up and the election records it.
func TestLosingThePrimaryWithAReplicaWaitsAndSaysWhatToDo(t *testing.T) {
	spec := testSpec(2)
	lost := []Node{unreachable(primary(9), 5), unreachable(replica(1, 9), 5), detached(replica(2, 7))}
	d := Decide(steadyState(), obsAt(5, spec, lost...))
	if d.Transition != nil {
		t.Fatalf("no failover may start while s0-1 is unseen: %s", d)
	}
	for _, want := range []string{"s0-1", "WAIT 1", "Bring them back", "valkey.fsm.dev/failover-without"} {
		if !strings.Contains(d.Waiting.FailoverHeldBack(), want) {
			t.Fatalf("waiting must say %q: %q", want, d.Waiting)
		}
	}
	for _, c := range Observed(steadyState(), obsAt(5, spec, lost...), d) {
		if c.Type == ConditionReady && (c.Status != ConditionFalse || !strings.Contains(c.Message, "failover-without")) {
			t.Fatalf("Ready must be False and say what to do: %+v", c)
		}
	}

	spec.FailoverWithout = []string{"s0-1"}
	d = Decide(steadyState(), obsAt(6, spec, lost...))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("named in failover-without, s0-1 no longer holds the failover back: %s", d)
	}
	d = Decide(d.Next, obsAt(7, spec, lost...))
	if d.Transition == nil || d.Transition.Event != EventCandidateElected || d.Next.Op.Election.Candidate != "s0-2" {
		t.Fatalf("want s0-2 elected, got %s", d)
	}
	if why := d.Transition.Why; why.Kind != ReasonElected || why.GivenUp != "s0-1" {
		t.Fatalf("the election must record the user's decision: %+v", why)
	}
	// Naming a node that is seen changes nothing: it still counts, and nothing is given up.
	spec.FailoverWithout = []string{"s0-2"}
	if d := Decide(steadyState(), obsAt(6, spec, lost...)); d.Transition != nil {
		t.Fatalf("s0-1 is still unseen and not named: %s", d)
	}
}
