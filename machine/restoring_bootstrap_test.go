package machine

import (
	"testing"
)

// TestANewClusterRestoresBeforeItOpensForWrites: a bootstrapping cluster asked to restore a
// snapshot goes from Bootstrapping to Restoring once wired (not to Steady), loads the snapshot
// into its first node while client writes are still fenced, and opens writes only after
// restore-complete. Without the request, the same observation completes the bootstrap.
func TestANewClusterRestoresBeforeItOpensForWrites(t *testing.T) {
	spec := testSpec(2)
	spec.Restore = &RestoreRequest{ID: "backup/nightly", Snapshot: "s3://b/ns/c/nightly", Shards: 1}
	// Wired: s0-0 serves replicas with client writes still fenced, the others follow it.
	prim := node(0, RolePrimary, "h1", 14)
	prim.Valkey.WritesFenced, prim.Valkey.SyncFenced = true, false
	wired := []Node{prim, replica(1, 14), replica(2, 14)}
	d := Decide(Persisted{State: Bootstrapping}, obsAt(1, spec, wired...))
	if d.Transition == nil || d.Transition.Event != EventRestoreRequested || d.Next.State != Restoring || d.Next.Op.Restore.Request != "backup/nightly" {
		t.Fatalf("a wired cluster with a restore to do took %+v (state %s)", d.Transition, d.Next.State)
	}
	if got := actionsOf(d, "open-writes"); len(got) > 0 {
		t.Fatalf("opened writes before the restore: %v", got)
	}
	pending := spec
	pending.Restore = &RestoreRequest{ID: "backup/nightly", Snapshot: "s3://b/ns/c/nightly", Shards: 1, Pending: "verifying the backup"}
	if d := Decide(Persisted{State: Bootstrapping}, obsAt(1, pending, wired...)); d.Transition != nil || len(actionsOf(d, "open-writes")) > 0 || d.Waiting.IsZero() {
		t.Fatalf("a restore still being verified: %+v %v waiting %q; want the bootstrap to wait, closed", d.Transition, d.Actions, d.Waiting)
	}
	plain := spec
	plain.Restore = nil
	if d := Decide(Persisted{State: Bootstrapping}, obsAt(1, plain, wired...)); d.Transition == nil || d.Transition.Event != EventBootstrapComplete {
		t.Fatalf("without a restore the bootstrap does not complete: %+v", d.Transition)
	}

	// Restoring: the fenced first node is loaded.
	p := d.Next
	d = Decide(p, obsAt(2, spec, wired...))
	if got := actionsOf(d, "restore-snapshot"); len(got) != 1 || got[0] != "restore-snapshot s3://b/ns/c/nightly into s0-0" {
		t.Fatalf("restore actions %v (waiting %q)", got, d.Waiting)
	}
	if got := actionsOf(d, "open-writes"); len(got) > 0 {
		t.Fatalf("opened writes while restoring: %v", got)
	}

	// Loaded: a new history, the snapshot's ID; the replicas resync from it.
	loaded := node(0, RolePrimary, "h2", 0)
	loaded.Valkey.WritesFenced, loaded.Valkey.SyncFenced, loaded.Valkey.Snapshot = true, false, "backup/nightly"
	// The loaded node is the recorded process: its new history is recorded (history-renamed,
	// or snapshot-loaded for another node), and writes stay fenced.
	d = Decide(d.Next, obsAt(3, spec, loaded, replica(1, 14), replica(2, 14)))
	if d.Transition == nil || (d.Transition.Event != EventHistoryRenamed && d.Transition.Event != EventSnapshotLoaded) || len(actionsOf(d, "open-writes")) > 0 {
		t.Fatalf("the load was not recorded: %+v %v", d.Transition, d.Actions)
	}
	synced := func(ord int) Node {
		n := replica(ord, 0)
		n.Valkey.ReplID, n.Valkey.Snapshot = "h2", "backup/nightly"
		return n
	}
	d = until(t, d.Next, obsAt(4, spec, loaded, synced(1), synced(2)), EventRestoreComplete)
	if d.Next.Restored != "backup/nightly" {
		t.Fatalf("the restore completed without recording it: %+v", d.Next)
	}
	d = Decide(d.Next, obsAt(5, spec, loaded, synced(1), synced(2)))
	if got := actionsOf(d, "open-writes"); len(got) != 1 {
		t.Fatalf("Steady after the restore opens %v, want s0-0", got)
	}
	// Done once: the same request does not restore again.
	if d := Decide(d.Next, obsAt(6, spec, loaded, synced(1), synced(2))); d.Transition != nil && d.Transition.Event == EventRestoreRequested {
		t.Fatal("the restore was requested again after it completed")
	}
}

// until decides on obs from p, persisting each transition, until event is taken (at most five
// transitions); it fails t if a decision opens writes on the way or another event ends it.
func until(t *testing.T, p Persisted, obs Observation, event Event) Decision {
	t.Helper()
	for i := 0; i < 5; i++ {
		d := Decide(p, obs)
		if got := actionsOf(d, "open-writes"); len(got) > 0 && event != EventRestoreComplete {
			t.Fatalf("opened writes on the way to %s: %v", event, got)
		}
		if d.Transition == nil {
			t.Fatalf("no %s: nothing taken (waiting %q)", event, d.Waiting)
		}
		if d.Transition.Event == event {
			return d
		}
		p = d.Next
	}
	t.Fatalf("no %s within five transitions", event)
	return Decision{}
}
