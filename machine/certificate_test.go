package machine

import (
	"strings"
	"testing"
)

func serving(n Node, serial string) Node {
	n.Valkey.CertificateSerial = serial
	return n
}

// A renewed certificate is loaded by every node that serves another one, and recorded once all
// serve it; nodes that serve no TLS (not rolled yet) neither hold it back nor get the action; a
// running node that does not answer holds the record back.
func TestARenewedCertificateIsReloadedAndRecordedOnceEveryNodeServesIt(t *testing.T) {
	spec := testSpec(2)
	spec.Certificate = "b2"
	p := steadyState()
	p.Certificate = "a1"
	d := Decide(p, obsAt(1, spec, serving(primary(10), "a1"), serving(replica(1, 10), "b2"), replica(2, 10)))
	if d.Transition != nil {
		t.Fatalf("recorded while the primary serves the old certificate: %+v", d.Transition)
	}
	if got := actionsOf(d, "reload-certificate"); len(got) != 1 || !strings.Contains(got[0], "s0-0") {
		t.Fatalf("want reload-certificate on s0-0 only, got %v", d.Actions)
	}
	d = Decide(p, obsAt(2, spec, serving(primary(10), "b2"), serving(replica(1, 10), "b2"), unreachable(replica(2, 10), 1)))
	if d.Transition != nil {
		t.Fatalf("recorded while a running node does not answer: %+v", d.Transition)
	}
	d = Decide(p, obsAt(3, spec, serving(primary(10), "b2"), serving(replica(1, 10), "b2"), replica(2, 10)))
	if d.Transition == nil || d.Transition.Event != EventCertificateReloaded || d.Next.Certificate != "b2" || d.Next.State != Steady {
		t.Fatalf("want certificate-reloaded recording b2, got %+v", d.Transition)
	}
	if len(actionsOf(d, "reload-certificate")) != 0 {
		t.Fatalf("nothing to reload: %v", d.Actions)
	}
	if d = Decide(d.Next, obsAt(4, spec, serving(primary(10), "b2"), serving(replica(1, 10), "b2"), replica(2, 10))); d.Transition != nil {
		t.Fatalf("recorded twice: %+v", d.Transition)
	}
	spec.Certificate = ""
	if d = Decide(p, obsAt(5, spec, serving(primary(10), "a1"), replica(1, 10), replica(2, 10))); d.Transition != nil || len(d.Actions) != 0 {
		t.Fatalf("no usable certificate in the Secret: nothing to do, got %+v %v", d.Transition, d.Actions)
	}
}
