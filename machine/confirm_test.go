package machine

import (
	"strings"
	"testing"
)

// The operator's probes fail but the replicas still hear from the primary: the operator is cut
// off, not the primary. No failover; once the replicas stop hearing from it, the failover goes.
func TestReplicasThatHearThePrimaryHoldOffTheFailover(t *testing.T) {
	spec := testSpec(2)
	heard := func(ord int) Node {
		n := replica(ord, 40)
		n.Valkey.HeardFromPrimary = true
		return n
	}
	gone := unreachable(primary(40), 5)
	d := Decide(steadyState(), obsAt(5, spec, gone, heard(1), replica(2, 40)))
	if d.Transition != nil {
		t.Fatalf("a replica hears the primary: no failover, got %s", d)
	}
	if w := d.Waiting; w.Kind != WaitFailover || !strings.Contains(w.Detail, "s0-1 still hear from it") {
		t.Fatalf("the status must say why: %q", d.Waiting)
	}
	d = Decide(steadyState(), obsAt(6, spec, gone, replica(1, 40), replica(2, 40)))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("no replica hears it any more: want primary-lost, got %s", d)
	}
}
