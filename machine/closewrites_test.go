package machine

import (
	"strings"
	"testing"
)

// TestClosedWritesStayClosedForAFinalBackup: a cluster being deleted for a final backup
// (Spec.CloseWrites) has its primary closed to client writes, with no transition; a primary
// closed (after the close, or after a failover, whose new primary starts closed) is never
// opened again, and no planned operation starts (a new revision does not roll); a primary
// that also refuses its replicas has replication opened (its writes close on the next turn).
// Without CloseWrites the same closed primary is opened.
func TestClosedWritesStayClosedForAFinalBackup(t *testing.T) {
	spec := testSpec(2)
	spec.CloseWrites = true
	p := steadyState()
	prim, r1, r2 := primary(100), replica(1, 100), replica(2, 100)

	d := Decide(p, obsAt(5, spec, prim, r1, r2))
	if d.Transition != nil || d.Next.State != Steady {
		t.Fatalf("closing writes for a final backup records nothing: %s", d)
	}
	if got := actionsOf(d, "close-writes"); len(got) != 1 || got[0] != "close-writes s0-0" {
		t.Fatalf("want the primary closed to writes, got %s", d)
	}
	if d.Waiting.Kind != WaitCloseWrites || !strings.Contains(d.Waiting.Detail, "final backup") {
		t.Errorf("waiting %q does not say why writes are closed", d.Waiting)
	}

	prim.Valkey.WritesFenced = true
	spec.Revision = "r2" // would start a roll on a converged cluster
	d = Decide(p, obsAt(6, spec, prim, r1, r2))
	if d.Transition != nil || len(actionsOf(d, "open-writes"))+len(actionsOf(d, "close-writes")) > 0 {
		t.Fatalf("a closed primary: want it left closed and no operation started, got %s", d)
	}

	prim.Valkey.SyncFenced = true
	d = Decide(p, obsAt(7, spec, prim, r1, r2))
	if got := actionsOf(d, "open-writes"); len(got) != 1 {
		t.Fatalf("a primary refusing its replicas: want replication opened, got %s", d)
	}
	prim.Valkey.SyncFenced = false
	prim.Valkey.WritesFenced = false
	d = Decide(p, obsAt(8, spec, prim, r1, r2))
	if got := actionsOf(d, "close-writes"); len(got) != 1 {
		t.Fatalf("opened for its replicas: want client writes closed again, got %s", d)
	}

	spec.CloseWrites, spec.Revision = false, "r1"
	prim.Valkey.WritesFenced = true
	d = Decide(p, obsAt(9, spec, prim, r1, r2))
	if got := actionsOf(d, "open-writes"); len(got) != 1 {
		t.Fatalf("without CloseWrites a closed primary is opened, got %s", d)
	}
}
