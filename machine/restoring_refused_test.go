package machine

import (
	"strings"
	"testing"
)

// A Steady cluster whose restore request is pending (its backup is being checked, or was
// refused) does not start it, keeps serving, and says why in its wait; once the request is
// checked, it starts.
func TestARefusedRestoreWaitsAndSaysWhy(t *testing.T) {
	spec := testSpec(1)
	const why = "refused: RDB check failed: at byte 21: a string claims 1099511627776 bytes, only 9 remain in the file"
	spec.Restore = &RestoreRequest{ID: "s3://b/c/crafted/", Snapshot: "s3://b/c/crafted/", Shards: 1, Pending: why}
	d := Decide(steadyState(), obsAt(1, spec, primary(10), replica(1, 10)))
	if d.Transition != nil || len(actionsOf(d, "restore-snapshot")) > 0 || len(actionsOf(d, "fence")) > 0 {
		t.Fatalf("a refused restore started: %+v %v", d.Transition, d.Actions)
	}
	if w := d.Waiting; w.Kind != WaitRestore || !strings.Contains(w.Detail, why) {
		t.Fatalf("waiting %q, want the refusal's reason", d.Waiting)
	}
	spec.Restore.Pending = ""
	if d := Decide(steadyState(), obsAt(2, spec, primary(10), replica(1, 10))); d.Transition == nil || d.Transition.Event != EventRestoreRequested {
		t.Fatalf("the checked restore did not start: %+v", d.Transition)
	}
}
