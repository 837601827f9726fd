package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// A backup refused for its content is not read again every refusedRecheck (the same object is
// refused again, and a large one is read whole each time): only once the cluster's spec
// changes. A refusal that says nothing of the content (the store did not answer) is checked
// again after refusedRecheck.
func TestARefusedBackupIsCheckedAgainOnlyWhenThatCanHelp(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	later := t0.Add(10 * refusedRecheck)
	const cluster = "uid-1"
	for _, tc := range []struct {
		name      string
		err       error
		gen       int64
		wantCheck bool
	}{
		{"content refused, same spec", fmt.Errorf("shard 0: %w: at byte 21: a string claims 1099511627776 bytes", backup.ErrCorrupt), 1, false},
		{"content refused, spec changed", fmt.Errorf("shard 0: %w: sha256", backup.ErrCorrupt), 2, true},
		{"store unreachable, same spec", errors.New("reading the manifest: connection refused"), 1, true},
	} {
		var c restoreChecks
		fresh := restoreCheck{id: "s3://b/c/crafted/", gen: 1}
		if _, start := c.want(cluster, fresh, t0); !start {
			t.Fatalf("%s: the first check did not start", tc.name)
		}
		done := fresh
		done.at, done.err = t0, tc.err
		if !c.finish(cluster, done) {
			t.Fatalf("%s: the check's outcome was not recorded", tc.name)
		}
		again := fresh
		again.gen = tc.gen
		if _, start := c.want(cluster, again, later); start != tc.wantCheck {
			t.Errorf("%s: checked again %v, want %v", tc.name, start, tc.wantCheck)
		}
	}
}

// A load of the restore under way refused for what its snapshot holds (its files changed after
// the check) reaches the machine as the request's Pending refusal, so the load is not tried
// again, until the cluster's spec changes; another failure (a node that did not answer) leaves
// the request as it was, to be retried.
func TestALoadRefusedForItsContentIsNotTriedAgain(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Now: func() time.Time { return t0 }, Recorder: rec}
	store := backup.Store{Bucket: "b", Prefix: "c/"}
	id := store.Location("nightly/")
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{UID: "uid-2", Generation: 3}, Spec: v1beta1.ValkeyClusterSpec{RestoreFrom: &v1beta1.RestoreSource{Store: &v1beta1.BackupStore{Bucket: "b"}, Path: "nightly"}}}
	// The restore was checked and started: the resolution of this generation is remembered.
	r.restores.want(vc.UID, restoreCheck{id: id, gen: 3, store: store, path: "nightly", done: true, at: t0}, t0)
	p := machine.Persisted{State: machine.Restoring, Op: machine.Operation{Restore: machine.Restore{Request: id, Snapshot: id, GiveBack: true}}}
	request := func() *machine.RestoreRequest {
		w := &world{}
		req, _ := r.restoreRequest(context.Background(), vc, p, w)
		return req
	}
	if req := request(); req == nil || req.ID != id || req.Pending != "" {
		t.Fatalf("the restore under way: %+v, want its request as it was", req)
	}
	a := machine.RestoreSnapshot{Target: machine.Target{Shard: 0, Node: "vk-0"}, RequestID: id, Snapshot: id}
	if err := r.loadFailed(vc, a, errors.New("vk-0 did not connect")); err == nil {
		t.Fatal("the load's error was swallowed")
	}
	if req := request(); req.Pending != "" {
		t.Fatalf("a failure that is not the snapshot's content stopped the retries: %q", req.Pending)
	}
	refused := fmt.Errorf("shard 0: %w: the file's sha256 is not the manifest's", backup.ErrCorrupt)
	_ = r.loadFailed(vc, a, refused)
	if e := <-rec.Events; !strings.Contains(e, "RestoreRefused") || !strings.Contains(e, "not tried again") {
		t.Fatalf("the refusal's Event: %q", e)
	}
	if req := request(); !strings.Contains(req.Pending, "refused: ") || !strings.Contains(req.Pending, "sha256") {
		t.Fatalf("after a refusal for the content, the request says %q; want the refusal", req.Pending)
	}
	// The refusal is the restore's, not the spec's: a check of another restore the spec names
	// now does not replace it.
	r.restores.want(vc.UID, restoreCheck{id: store.Location("hourly/"), gen: 3, store: store, path: "hourly"}, t0)
	if why := r.refusedLoads.of(vc.UID, id, 3); !strings.Contains(why, "sha256") {
		t.Fatalf("another restore's check replaced the refusal: %q", why)
	}
	// A changed spec lets one load be tried again.
	if why := r.refusedLoads.of(vc.UID, id, 4); why != "" {
		t.Fatalf("a changed spec did not let the load be tried again: %q", why)
	}
}
