package machine

import (
	"strings"
	"testing"
)

// restoringFrom is a Steady cluster that has just started restoring req: its primary s0-0
// (history h1) and two replicas, the primary fenced.
func restoringFrom(t *testing.T, req RestoreRequest) (Persisted, Spec, []Node) {
	t.Helper()
	spec := testSpec(2)
	spec.Restore = &req
	nodes := []Node{primary(10), replica(1, 10), replica(2, 10)}
	d := Decide(steadyState(), obsAt(1, spec, nodes...))
	if d.Transition == nil || d.Transition.Event != EventRestoreRequested || !d.Next.Op.Restore.GiveBack {
		t.Fatalf("the restore did not start as one that can give back: %+v %+v", d.Transition, d.Next.Op)
	}
	nodes[0].Valkey.WritesFenced, nodes[0].Valkey.SyncFenced = true, true
	return d.Next, spec, nodes
}

// A load refused for what the snapshot holds, before any node's data changed, gives a serving
// cluster back as it was: Steady, writes open again, the request not retried. Its refusal
// observed while the primary still answers under its history counts, also when a detach from
// an unfinished sync shifted it to a new ID (the old one as its previous).
func TestARestoreRefusedBeforeAnyChangeGivesTheClusterBack(t *testing.T) {
	req := RestoreRequest{ID: "s3://b/c/nightly/", Snapshot: "s3://b/c/nightly/", Shards: 1}
	p, spec, nodes := restoringFrom(t, req)
	if d := Decide(p, obsAt(2, spec, nodes...)); len(actionsOf(d, "restore-snapshot")) != 1 {
		t.Fatalf("the fenced shard is not loaded: %v (waiting %q)", d.Actions, d.Waiting)
	}
	const why = "RDB check failed: the file's sha256 is not the manifest's"
	refused := req
	refused.Pending = "refused: " + why // as the operator says it of a refused request
	spec.Restore = &refused
	spec.RefusedLoad = RefusedLoad{ID: req.ID, Why: why}
	for _, shifted := range []bool{false, true} {
		obs := append([]Node(nil), nodes...)
		if shifted {
			obs[0].Valkey.ReplID, obs[0].Valkey.ReplID2 = "h-detached", "h1"
		}
		d := Decide(p, obsAt(3, spec, obs...))
		if d.Transition == nil || d.Transition.Event != EventRestoreGivenBack || d.Next.State != Steady || d.Next.Op != (Operation{}) {
			t.Fatalf("shifted %v: a refused restore with nothing changed took %+v (waiting %q)", shifted, d.Transition, d.Waiting)
		}
		if !strings.Contains(d.Transition.Message, why) {
			t.Fatalf("the transition does not say why: %q", d.Transition.Message)
		}
		d = Decide(d.Next, obsAt(4, spec, obs...))
		if got := actionsOf(d, "open-writes"); len(got) != 1 || len(actionsOf(d, "restore-snapshot")) > 0 || d.Transition != nil {
			t.Fatalf("shifted %v: Steady after the give-back opens %v, transition %+v, actions %v", shifted, got, d.Transition, d.Actions)
		}
		if d.Waiting.Kind != WaitRestore || !strings.Contains(d.Waiting.Detail, why) {
			t.Fatalf("Steady does not say the restore was refused: %q", d.Waiting)
		}
	}
}

// A refused load whose shard's primary may have changed (a new history with no trace of the
// old one: the key-by-key load empties a node only after taking a new ID; or another process)
// keeps writes closed and says why; the load is not tried again. A shard recorded as loaded
// rules a give-back out, and so does a restore asked at creation.
func TestARefusedRestoreThatMayHaveChangedDataWaitsClosed(t *testing.T) {
	req := RestoreRequest{ID: "s3://b/c/nightly/", Snapshot: "s3://b/c/nightly/", Shards: 1}
	p, spec, nodes := restoringFrom(t, req)
	spec.RefusedLoad = RefusedLoad{ID: req.ID, Why: "the object changed while it was loaded"}
	emptied := append([]Node(nil), nodes...)
	emptied[0].Valkey.ReplID, emptied[0].Valkey.ReplID2 = "h-new", ""
	restarted := append([]Node(nil), nodes...)
	restarted[0].Valkey.RunID = "run-0b"
	notBack := p
	notBack.Op.Restore.GiveBack = false
	for name, c := range map[string]struct {
		p     Persisted
		nodes []Node
	}{"emptied": {p, emptied}, "restarted": {p, restarted}, "loaded-or-new": {notBack, nodes}} {
		d := Decide(c.p, obsAt(3, spec, c.nodes...))
		if d.Transition != nil && d.Transition.Event == EventRestoreGivenBack {
			t.Fatalf("%s: gave the cluster back: %s", name, d.Transition.Message)
		}
		if len(actionsOf(d, "restore-snapshot")) > 0 || len(actionsOf(d, "open-writes")) > 0 {
			t.Fatalf("%s: a refused restore acted: %v", name, d.Actions)
		}
		if d.Waiting.Kind != WaitRestoreRefused || !strings.Contains(d.Waiting.Detail, "refused: the object changed") {
			t.Fatalf("%s: waiting %q, want the refusal and what to do", name, d.Waiting)
		}
	}
	// The spec naming another restore, still being checked, or none, does not let the refused
	// one be loaded again.
	emptiedSpec := spec
	for name, r := range map[string]*RestoreRequest{"another being checked": {ID: "s3://b/c/other/", Snapshot: "s3://b/c/other/", Shards: 1, Pending: "verifying the backup"}, "none": nil} {
		emptiedSpec.Restore = r
		d := Decide(p, obsAt(4, emptiedSpec, emptied...))
		if len(actionsOf(d, "restore-snapshot")) > 0 || len(actionsOf(d, "open-writes")) > 0 || (d.Transition != nil && d.Transition.Event == EventRestoreGivenBack) {
			t.Fatalf("spec names %s: the refused restore acted: %+v %v", name, d.Transition, d.Actions)
		}
	}
	// Loading a shard takes the give-back away for good.
	loaded := node(0, RolePrimary, "h2", 0)
	loaded.Valkey.WritesFenced, loaded.Valkey.Snapshot = true, req.ID
	spec.RefusedLoad = RefusedLoad{}
	d := Decide(p, obsAt(5, spec, loaded, replica(1, 10), replica(2, 10)))
	if d.Transition == nil || (d.Transition.Event != EventSnapshotLoaded && d.Transition.Event != EventHistoryRenamed) {
		t.Fatalf("the load was not recorded: %+v", d.Transition)
	}
	if d.Transition.Event == EventSnapshotLoaded && d.Next.Op.Restore.GiveBack {
		t.Fatalf("snapshot-loaded kept the give-back: %+v", d.Next.Op)
	}
}

// A newer checked request replaces the restore under way (refused or not); one still being
// checked does not.
func TestANewerRestoreReplacesTheOneUnderWay(t *testing.T) {
	req := RestoreRequest{ID: "s3://b/c/nightly/", Snapshot: "s3://b/c/nightly/", Shards: 1}
	p, spec, nodes := restoringFrom(t, req)
	newer := RestoreRequest{ID: "s3://b/c/hourly/", Snapshot: "s3://b/c/hourly/", Shards: 1, Pending: "verifying the backup"}
	spec.Restore = &newer
	if d := Decide(p, obsAt(3, spec, nodes...)); d.Transition != nil && d.Transition.Event == EventRestoreRequested {
		t.Fatalf("a request still being checked replaced the restore: %s", d.Transition.Message)
	}
	newer.Pending = ""
	d := Decide(p, obsAt(4, spec, nodes...))
	if d.Transition == nil || d.Transition.Event != EventRestoreRequested || d.Next.Op.Restore.Request != newer.ID || d.Next.State != Restoring {
		t.Fatalf("the newer restore did not replace the one under way: %+v", d.Transition)
	}
	if got := actionsOf(Decide(d.Next, obsAt(5, spec, nodes...)), "restore-snapshot"); len(got) != 1 || !strings.Contains(got[0], "hourly") {
		t.Fatalf("the newer snapshot is not loaded: %v", got)
	}
}
