package operatorsuite

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// setFinalBackup sets or removes spec.deletion.finalBackup, a field of v1beta1 only, on the
// cluster's v1beta1 form.
func setFinalBackup(t *testing.T, ctx context.Context, ns, name string, on bool) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var hub v1beta1.ValkeyCluster
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &hub); err != nil {
			return err
		}
		hub.Spec.Deletion = nil
		if on {
			hub.Spec.Deletion = &v1beta1.DeletionSpec{FinalBackup: true}
		}
		return k.Update(ctx, &hub)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// finalBackups lists the namespace's ValkeyBackups of cluster.
func finalBackups(t *testing.T, ctx context.Context, ns, cluster string) []v1alpha1.ValkeyBackup {
	t.Helper()
	var list v1alpha1.ValkeyBackupList
	if err := k.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []v1alpha1.ValkeyBackup
	for _, b := range list.Items {
		if b.Spec.Cluster == cluster {
			out = append(out, b)
		}
	}
	return out
}

// deleteOrFail deletes the cluster (background propagation, kubectl delete's default).
func deleteOrFail(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	if err := k.Delete(ctx, &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// waitGone waits until the cluster is gone; check runs on every poll while it exists.
func waitGone(t *testing.T, ctx context.Context, ns, name string, timeout time.Duration, check func(*v1alpha1.ValkeyCluster)) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(200 * time.Millisecond) {
		var vc v1alpha1.ValkeyCluster
		err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vc)
		if apierrors.IsNotFound(err) {
			return
		}
		if err == nil && check != nil {
			check(&vc)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s still there after %s (waiting %q)\n%s", ns, name, timeout, vc.Status.Waiting, operatorTrail(ns))
		}
	}
}

// TestDeletingWithAFinalBackupBacksUpEveryAcknowledgedWriteFirst: a Replication cluster with
// spec.deletion.finalBackup holds 2,000 keys and a client keeps writing while it is deleted.
// The deletion closes client writes, creates one ValkeyBackup (said in an Event), and the
// cluster goes only once that backup completed; its StatefulSet goes after it, the backup
// stays (owned by nobody). A new cluster restored from it holds every write the client had
// acknowledged, and otherwise exactly the data before the deletion (digest of every key's
// DUMP, read at each pod with the test's own client). A cluster deleted without finalBackup
// meanwhile goes at once, and no backup of it is made.
func TestDeletingWithAFinalBackupBacksUpEveryAcknowledgedWriteFirst(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 6*time.Minute)
	spec, _ := s3Store(t, ctx, ns)

	// Without finalBackup: the deletion does not wait, and takes no backup.
	backedUpCluster(t, ctx, ns, "plain", 1, spec, nil)
	deleteOrFail(t, ctx, ns, "plain")
	waitGone(t, ctx, ns, "plain", time.Minute, nil)

	vc := backedUpCluster(t, ctx, ns, "orders", 3, spec, nil)
	setFinalBackup(t, ctx, ns, "orders", true)
	c := writable(t, vc)
	fill(t, ctx, c, "k", 2000)
	before, _ := dumpDigest(t, ctx, c)

	// A client writes until it is refused; every write it got an answer to is acknowledged.
	var acked atomic.Int64
	stopped := make(chan error, 1)
	go func() {
		for i := int64(0); ; i++ {
			if err := c.Do(ctx, c.B().Set().Key(fmt.Sprintf("w:%d", i)).Value(fmt.Sprint(i)).Build()).Error(); err != nil {
				stopped <- err
				return
			}
			acked.Store(i + 1)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	deleteOrFail(t, ctx, ns, "orders")
	var refused error
	select {
	case refused = <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("the client still writes a minute after the deletion")
	}
	t.Logf("the client's writes were refused after %d acknowledged ones: %v", acked.Load(), refused)

	// The cluster goes only once its final backup completed.
	waitGone(t, ctx, ns, "orders", 3*time.Minute, func(*v1alpha1.ValkeyCluster) {
		if b := finalBackups(t, ctx, ns, "orders"); len(b) > 1 {
			t.Fatalf("%d backups of the deleted cluster: %v", len(b), b)
		}
	})
	backups := finalBackups(t, ctx, ns, "orders")
	if len(backups) != 1 {
		t.Fatalf("%d backups of the deleted cluster, want its one final backup", len(backups))
	}
	vb := backups[0]
	name := vb.Name
	if vb.Status.Phase != v1alpha1.BackupCompleted || len(vb.OwnerReferences) != 0 || vb.Labels["valkey.fsm.dev/final-backup"] != "true" || !strings.HasPrefix(name, "orders-final-") {
		t.Fatalf("the final backup: name %s, labels %v, owners %v, status %+v", name, vb.Labels, vb.OwnerReferences, vb.Status)
	}
	if note := eventNote(t, ctx, ns, "orders", "FinalBackupCreated"); !strings.Contains(note, name) {
		t.Errorf("the FinalBackupCreated Event says %q; want the backup's name %s", note, name)
	}
	if !eventSeen(t, ctx, ns, "orders", "FinalBackupCompleted") {
		t.Error("no FinalBackupCompleted Event")
	}
	// The owned objects go after the cluster (the garbage collector).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var sts appsv1.StatefulSetList
		if err := k.List(ctx, &sts, client.InNamespace(ns), client.MatchingLabels{"valkey.fsm.dev/cluster": "orders"}); err != nil {
			t.Fatal(err)
		}
		if len(sts.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted cluster's StatefulSets are still there")
		}
	}
	time.Sleep(2 * time.Second)
	if b := finalBackups(t, ctx, ns, "orders"); len(b) != 1 || b[0].Status.Phase != v1alpha1.BackupCompleted {
		t.Fatalf("the final backup did not survive its cluster: %v", b)
	}
	if b := finalBackups(t, ctx, ns, "plain"); len(b) != 0 {
		t.Errorf("a cluster deleted without finalBackup was backed up: %v", b)
	}

	// Restored into a new cluster: every acknowledged write, and the data before the deletion.
	cp := newCluster(ns, "orders-again", v1alpha1.TopologyReplication, 2)
	cp.Spec.RestoreFrom = &v1alpha1.RestoreSource{Backup: name}
	if err := k.Create(ctx, cp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "orders-again", 3*time.Minute, "restored", restorePhase("Completed"))
	cp = waitFor(t, ns, "orders-again", time.Minute, "Steady with 2 ready", steadyWith(2))
	rc := writable(t, cp)
	n := acked.Load()
	written := extraKeys(t, ctx, rc, "w:*")
	if int64(len(written)) < n || int64(len(written)) > n+1 {
		t.Fatalf("the restored cluster holds %d of the client's keys; %d were acknowledged", len(written), n)
	}
	for i := int64(0); i < n; i++ {
		if v, err := rc.Do(ctx, rc.B().Get().Key(fmt.Sprintf("w:%d", i)).Build()).ToString(); err != nil || v != fmt.Sprint(i) {
			t.Fatalf("acknowledged write w:%d = %d: the restored cluster has %q (%v)", i, i, v, err)
		}
	}
	for _, key := range written {
		if err := rc.Do(ctx, rc.B().Del().Key(key).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rc.Do(ctx, rc.B().Wait().Numreplicas(1).Timeout(10000).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for i, d := range nodeDigests(t, ctx, cp) {
		if d != before {
			t.Errorf("pod %s of the restored cluster holds other data than the deleted cluster held besides the client's writes", cp.Status.Nodes[i].Pod)
		}
	}
}

// extraKeys lists the keys matching pattern.
func extraKeys(t *testing.T, ctx context.Context, c vk.Client, pattern string) []string {
	t.Helper()
	var out []string
	cursor := uint64(0)
	for {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			return out
		}
	}
}

// TestAFinalBackupTheStoreRefusesHoldsTheDeletionUntilItIsGivenUp: the store refuses the
// credentials. The deletion waits: status.waiting names the final backup, the store's reason
// and how to go on without it, with a Warning Event. An operator restarted meanwhile finds
// the backup it made (no second one). Removing spec.deletion.finalBackup lets the deletion go.
func TestAFinalBackupTheStoreRefusesHoldsTheDeletionUntilItIsGivenUp(t *testing.T) {
	ns := cl.Namespace(t)
	fast := func(c *manager.Config) { c.BackupBackOff = 2 * time.Second }
	op := startOperator(t, "", fast)
	ctx := ctxFor(t, 5*time.Minute)
	spec, _ := s3Store(t, ctx, ns)
	wrong := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wrong"}, StringData: map[string]string{"AWS_ACCESS_KEY_ID": "nobody", "AWS_SECRET_ACCESS_KEY": "nothing"}}
	if err := k.Create(ctx, wrong); err != nil {
		t.Fatal(err)
	}
	spec.CredentialsSecret = "wrong"
	vc := backedUpCluster(t, ctx, ns, "app", 1, spec, nil)
	setFinalBackup(t, ctx, ns, "app", true)
	fill(t, ctx, writable(t, vc), "k", 100)
	deleteOrFail(t, ctx, ns, "app")

	failed := func(vc *v1alpha1.ValkeyCluster) bool {
		w := vc.Status.Waiting
		return strings.Contains(w, "the final backup app-final-") && strings.Contains(w, "failed") && strings.Contains(w, "shard 0") && strings.Contains(w, "remove spec.deletion.finalBackup")
	}
	waitFor(t, ns, "app", 2*time.Minute, "the deletion waiting for the failed final backup, saying why", failed)
	if note := eventNote(t, ctx, ns, "app", "FinalBackupFailed"); !strings.Contains(note, "remove spec.deletion.finalBackup") {
		t.Errorf("the FinalBackupFailed Event says %q", note)
	}

	// A new operator goes on with the same backup.
	op.stop(t)
	b := finalBackups(t, ctx, ns, "app")
	if len(b) != 1 {
		t.Fatalf("%d final backups before the restart", len(b))
	}
	attempts := b[0].Status.Attempts
	startOperator(t, "", fast)
	waitBackup(t, ns, b[0].Name, time.Minute, "tried again by the new operator", func(vb *v1alpha1.ValkeyBackup) bool {
		return vb.Status.Attempts > attempts || vb.Status.NextAttemptAt == nil
	})
	// Still waiting, for the same backup (its reason may now be the attempt the restart cut
	// short rather than the store's refusal).
	waitFor(t, ns, "app", time.Minute, "still waiting after the restart", func(vc *v1alpha1.ValkeyCluster) bool {
		return strings.Contains(vc.Status.Waiting, "the final backup "+b[0].Name) && strings.Contains(vc.Status.Waiting, "remove spec.deletion.finalBackup")
	})
	if b := finalBackups(t, ctx, ns, "app"); len(b) != 1 {
		t.Fatalf("%d final backups after the operator restarted, want the one it had made", len(b))
	}

	setFinalBackup(t, ctx, ns, "app", false)
	waitGone(t, ctx, ns, "app", time.Minute, nil)
	if !eventSeen(t, ctx, ns, "app", "FinalBackupSkipped") {
		t.Error("no FinalBackupSkipped Event")
	}
}

// TestAForegroundDeletionWithAFinalBackupWaitsAndSaysWhy: deleted with foreground propagation,
// a cluster's StatefulSet and pods are removed by the garbage collector before the cluster, so
// no final backup can be read: the deletion waits, says so in status.waiting and a Warning
// Event, and the operator does not make the StatefulSet again (the garbage collector drops its
// foregroundDeletion finalizer once it is gone, which leaves a deleted cluster that still
// waits). Removing spec.deletion.finalBackup lets it go.
func TestAForegroundDeletionWithAFinalBackupWaitsAndSaysWhy(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 4*time.Minute)
	spec, _ := s3Store(t, ctx, ns)
	backedUpCluster(t, ctx, ns, "fg", 1, spec, nil)
	setFinalBackup(t, ctx, ns, "fg", true)
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fg"}}
	if err := k.Delete(ctx, vc, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "fg", time.Minute, "waiting, saying foreground propagation removes the pods first", func(vc *v1alpha1.ValkeyCluster) bool {
		return strings.Contains(vc.Status.Waiting, "foreground propagation") && strings.Contains(vc.Status.Waiting, "remove spec.deletion.finalBackup")
	})
	if !eventSeen(t, ctx, ns, "fg", "FinalBackupFailed") {
		t.Error("no FinalBackupFailed Event")
	}
	// The garbage collector is done with the dependents: the cluster waits on, and nothing
	// comes back.
	waitFor(t, ns, "fg", time.Minute, "the foregroundDeletion finalizer dropped", func(vc *v1alpha1.ValkeyCluster) bool {
		for _, f := range vc.Finalizers {
			if f == metav1.FinalizerDeleteDependents {
				return false
			}
		}
		return true
	})
	time.Sleep(3 * time.Second)
	var sts appsv1.StatefulSetList
	if err := k.List(ctx, &sts, client.InNamespace(ns), client.MatchingLabels{"valkey.fsm.dev/cluster": "fg"}); err != nil {
		t.Fatal(err)
	}
	if len(sts.Items) != 0 {
		t.Fatalf("the StatefulSet the foreground deletion removed was made again")
	}
	if vc := get(t, ns, "fg"); !strings.Contains(vc.Status.Waiting, "remove spec.deletion.finalBackup") {
		t.Fatalf("once the dependents are gone the cluster says %q", vc.Status.Waiting)
	}
	setFinalBackup(t, ctx, ns, "fg", false)
	waitGone(t, ctx, ns, "fg", time.Minute, nil)
}
