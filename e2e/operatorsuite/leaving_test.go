package operatorsuite

import (
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestDeletingOrDrainingThePrimaryHandsOverFirst: `kubectl delete pod` of the primary and
// `kubectl drain` of its node, each under a client writing through the client Service. The
// pod's preStop hook holds the primary while the operator hands its role over
// (primary-leaving, a planned switchover whose cause the history names), so no acknowledged
// write is lost and the history shows a switchover, not a failover. The write gap is logged
// here; BenchmarkPlannedSwitchoverAndRollingGap measures it over many runs.
func TestDeletingOrDrainingThePrimaryHandsOverFirst(t *testing.T) {
	ns := cl.Namespace(t)
	_, tap := startTappedOperator(t)
	createReplication(t, ns, "leaving", 3)
	tapWorks(t, tap, ns, "leaving")
	for run, kind := range []string{"delete-pod", "drain"} {
		seq := len(get(t, ns, "leaving").Status.History)
		res := gapScenario(t, ns, "leaving", tap, "", kind, run)
		if res.lost > 0 || res.acked == 0 {
			t.Fatalf("%s: %d of %d acknowledged writes lost", kind, res.lost, res.acked)
		}
		vc := get(t, ns, "leaving")
		var events []string
		leaving, switched := false, false
		for _, h := range vc.Status.History[min(seq, len(vc.Status.History)):] {
			events = append(events, h.Event)
			leaving = leaving || h.Event == "primary-leaving" && strings.Contains(h.Message, "pod is being deleted")
			switched = switched || h.Event == "failover-complete" && strings.Contains(h.Message, "pod stops")
			if h.Event == "primary-lost" {
				t.Errorf("%s: the primary was lost, not handed over: %s", kind, h.Message)
			}
		}
		if !leaving || !switched {
			t.Fatalf("%s: no hand-over before the pod stopped in the history: %v\n%s", kind, events, summary(vc))
		}
		if vc.Status.State != v1alpha1.StateSteady {
			t.Fatalf("%s: %s", kind, summary(vc))
		}
		t.Logf("%s: longest write gap %s (quiet %s), %d acknowledged, none lost; history %v", kind, res.gap, res.quiet, res.acked, events)
	}
}
