package operatorsuite

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// uploadsInProgress counts the store's unfinished multipart uploads.
func uploadsInProgress(t *testing.T, ctx context.Context, store backup.Store) int {
	t.Helper()
	out, err := store.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(store.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Uploads)
}

// TestBackupsInterruptedMidStreamFailWithTheReasonAndAreRetried: snapshots are slowed down
// (rdb-key-save-delay, so that each stream lasts seconds) and each of three backups is cut off
// while it streams: the operator stopped (its successor finds the attempt interrupted and tries
// again), the replica being read SIGKILLed, and the S3
// server's pod deleted. Each attempt fails with its reason in status and an Event, the next
// one completes after the back-off, no partial upload is left in the store, and the cluster
// serves writes throughout.
func TestBackupsInterruptedMidStreamFailWithTheReasonAndAreRetried(t *testing.T) {
	ns := cl.Namespace(t)
	// Short back-offs, and attempts enough to outlast the S3 pod's return.
	fast := func(c *manager.Config) { c.BackupBackOff, c.BackupAttempts = 2*time.Second, 10 }
	op := startOperator(t, "", fast)
	ctx := ctxFor(t, 6*time.Minute)
	spec, store := s3Store(t, ctx, ns)
	vc := backedUpCluster(t, ctx, ns, "slow", 3, spec, func(vc *v1alpha1.ValkeyCluster) {
		// 1.5 ms per key while a snapshot is written: 3,000 keys stream for about 4.5 s.
		vc.Spec.Config = map[string]v1alpha1.ConfigValue{"rdb-key-save-delay": "1500"}
	})
	c := writable(t, vc)
	fill(t, ctx, c, "k", 3000)
	if err := c.Do(ctx, c.B().Wait().Numreplicas(2).Timeout(60000).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "slow", time.Minute, "Steady with 3 ready", steadyWith(3))
	// running waits until the backup streams and returns the node it reads.
	running := func(name string) string {
		t.Helper()
		vb := waitBackup(t, ns, name, time.Minute, "Running", phase(v1alpha1.BackupRunning))
		if len(vb.Status.Shards) != 1 {
			t.Fatalf("a running backup names %d source(s)", len(vb.Status.Shards))
		}
		time.Sleep(1500 * time.Millisecond) // into the stream
		return vb.Status.Shards[0].Node
	}
	// failed waits for the attempt's failure and checks what it says; retried for the next
	// attempt's success (the test does not wait for Failed then: with the cause gone, the
	// retry may have completed already).
	failed := func(name, why string) {
		t.Helper()
		// On a slow machine the retry may complete before a poll sees Failed: the Event
		// keeps what the failed attempt said.
		vb := waitBackup(t, ns, name, 2*time.Minute, "Failed", func(vb *v1alpha1.ValkeyBackup) bool {
			return vb.Status.Phase == v1alpha1.BackupFailed || (vb.Status.Phase == v1alpha1.BackupCompleted && vb.Status.Attempts > 1)
		})
		if vb.Status.Phase == v1alpha1.BackupCompleted {
			if note := eventNote(t, ctx, ns, name, "BackupFailed"); !strings.Contains(note, why) || !strings.Contains(note, "next attempt at") {
				t.Errorf("%s's failure Event says %q; want %q and a next attempt", name, note, why)
			}
		} else if !strings.Contains(vb.Status.Reason, why) || vb.Status.NextAttemptAt == nil {
			t.Errorf("%s failed with %q (next attempt %v); want a reason with %q and a next attempt", name, vb.Status.Reason, vb.Status.NextAttemptAt, why)
		}
		if err := c.Do(ctx, c.B().Set().Key("serving").Value(name).Build()).Error(); err != nil {
			t.Errorf("the cluster refused a write after %s failed: %v", name, err)
		}
	}
	retried := func(name string) {
		t.Helper()
		if !eventSeen(t, ctx, ns, name, "BackupFailed") {
			t.Errorf("no BackupFailed Event about %s", name)
		}
		vb := waitBackup(t, ns, name, 3*time.Minute, "Completed", phase(v1alpha1.BackupCompleted))
		if vb.Status.Attempts < 2 {
			t.Errorf("%s completed in %d attempt(s)", name, vb.Status.Attempts)
		}
		if n := uploadsInProgress(t, ctx, store); n != 0 {
			t.Errorf("after %s: %d multipart upload(s) left in the store", name, n)
		}
	}

	// The operator killed mid-stream: its upload stays in the store until the next one aborts it.
	if err := k.Create(ctx, newBackup(ns, "op-killed", "slow")); err != nil {
		t.Fatal(err)
	}
	running("op-killed")
	// Stopped in-process, the operator's context ends and Take aborts its own upload; a
	// SIGKILLed one cannot, and AbortStale (actuators/backup) is what cleans up then.
	op.stop(t)
	op2 := startOperator(t, "", fast)
	failed("op-killed", "interrupted")
	retried("op-killed")

	// The replica being read SIGKILLed.
	if err := k.Create(ctx, newBackup(ns, "replica-killed", "slow")); err != nil {
		t.Fatal(err)
	}
	replica := running("replica-killed")
	if replica == get(t, ns, "slow").Status.Primary {
		t.Fatalf("the backup reads the primary %s with two replicas", replica)
	}
	pid, err := cl.ContainerPID(ns, replica, "valkey")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	failed("replica-killed", "shard 0 ("+replica+")")
	retried("replica-killed")

	// The S3 server's pod deleted mid-stream (its emptyDir goes with it; the manifest's pod
	// comes back with an empty bucket).
	if err := k.Create(ctx, newBackup(ns, "s3-gone", "slow")); err != nil {
		t.Fatal(err)
	}
	running("s3-gone")
	if err := cl.Clientset().CoreV1().Pods(ns).Delete(ctx, "s3", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	failed("s3-gone", "shard 0")
	for {
		var p corev1.Pod
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s3"}, &p); err != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	s3Store(t, ctx, ns)
	retried("s3-gone")

	// A restore whose operator stops in the middle (the replicas' resync from the loaded node
	// is slowed down too) is finished by the next operator, from where the restore recorded its
	// snapshot: the ValkeyBackup it named is deleted meanwhile (its objects stay).
	atSnapshot, _ := dumpDigest(t, ctx, c)
	fill(t, ctx, c, "later", 500)
	restoreInPlace(t, ctx, ns, "slow", v1beta1.RestoreSource{Backup: "s3-gone"})
	waitFor(t, ns, "slow", 2*time.Minute, "Restoring", func(vc *v1alpha1.ValkeyCluster) bool { return vc.Status.State == v1alpha1.StateRestoring })
	time.Sleep(time.Second)
	op2.stop(t)
	if st := get(t, ns, "slow").Status; st.State != v1alpha1.StateRestoring {
		t.Logf("the restore ended before the operator stopped (%s): the resumption is not exercised", st.State)
	}
	if err := k.Delete(ctx, newBackup(ns, "s3-gone", "slow")); err != nil {
		t.Fatal(err)
	}
	startOperator(t, "", fast)
	location := "s3://backups/team-a/" + ns + "/slow/s3-gone/"
	waitFor(t, ns, "slow", 3*time.Minute, "restored", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.Machine != nil && vc.Status.Machine.Restored == location && vc.Status.State == v1alpha1.StateSteady
	})
	vc = waitFor(t, ns, "slow", time.Minute, "Steady with 3 ready", steadyWith(3))
	for i, d := range nodeDigests(t, ctx, vc) {
		if d != atSnapshot {
			t.Errorf("after the resumed restore, pod %s holds other data than the backup", vc.Status.Nodes[i].Pod)
		}
	}
}
