package machine

import (
	"strings"
	"testing"
)

// TestAPrimaryWhoseContainerRestartedIsLostAtOnce: the primary's container restarted (a new
// container ID) and its new process does not answer yet: the recorded process is gone, so the
// failover starts at once, without probes to count and without a fence wait (the process
// that could take writes is dead). Before, the restart was only seen at the next probe.
func TestAPrimaryWhoseContainerRestartedIsLostAtOnce(t *testing.T) {
	spec := testSpec(2)
	spec.FailureThreshold = 3
	prim := unreachable(primary(100), 1)
	prim.Pod.Running, prim.Pod.Restarted = true, true
	d := Decide(steadyState(), obsAt(5, spec, prim, replica(1, 100), replica(2, 100)))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost || !d.Next.Op.KnownFenced || !strings.Contains(d.Transition.Message, "its container restarted") {
		t.Fatalf("want primary-lost at the first failed survey, known fenced, got %s (op %+v)", d, d.Next.Op)
	}
	prim.Pod.Restarted = false
	if d := Decide(steadyState(), obsAt(5, spec, prim, replica(1, 100), replica(2, 100))); d.Transition != nil {
		t.Fatalf("one failed probe of a process that did not restart is no loss: %s", d)
	}
}
