package operatorsuite

import (
	"bytes"
	"context"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// restorePhase waits until status.restore reaches phase.
func restorePhase(phase string) func(*v1alpha1.ValkeyCluster) bool {
	return func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.Restore != nil && vc.Status.Restore.Phase == phase && vc.Status.State == v1alpha1.StateSteady
	}
}

// nodeDigests is dumpDigest of every pod of vc, read at the pod (replicas serve reads).
func nodeDigests(t *testing.T, ctx context.Context, vc *v1alpha1.ValkeyCluster) []string {
	t.Helper()
	var out []string
	for _, n := range vc.Status.Nodes {
		d, _ := dumpDigest(t, ctx, appClient(t, n.IP+":6379", password(t, vc)))
		out = append(out, d)
	}
	return out
}

// historyEvents lists status.history as "from-event->to".
func historyEvents(vc *v1alpha1.ValkeyCluster) []string {
	var out []string
	for _, h := range vc.Status.History {
		out = append(out, string(h.From)+" -"+h.Event+"-> "+string(h.To))
	}
	return out
}

// TestRestoreInPlaceAndIntoANewCluster: a backup of a 3-pod Replication cluster, then more
// writes and overwrites; restoreFrom on the running cluster takes it through Restoring and
// back to Steady with exactly the data at the snapshot on every pod (digest of every key's DUMP
// against the one taken at the snapshot), the later writes discarded; a new cluster of another
// name with restoreFrom goes from Bootstrapping to Restoring without ever being Steady before
// the load, and holds the same data. A backup with a flipped byte, a truncated one, and a path
// with no backup, are refused with the reason in status and an Event while the cluster keeps its data and
// serves writes.
func TestRestoreInPlaceAndIntoANewCluster(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 6*time.Minute)
	spec, store := s3Store(t, ctx, ns)
	vc := backedUpCluster(t, ctx, ns, "shop", 3, spec, nil)
	c := writable(t, vc)
	atSnapshot, keys := backedUpThenChanged(t, ctx, ns, "shop", c, 1000, 300, 200)

	// In place.
	restoreInPlace(t, ctx, ns, "shop", v1beta1.RestoreSource{Backup: "snap"})
	waitFor(t, ns, "shop", 3*time.Minute, "restored", restorePhase("Completed"))
	vc = waitFor(t, ns, "shop", time.Minute, "Steady with 3 ready", steadyWith(3))
	for i, d := range nodeDigests(t, ctx, vc) {
		if d != atSnapshot {
			t.Errorf("pod %s holds other data than at the snapshot (%d keys then)", vc.Status.Nodes[i].Pod, keys)
		}
	}
	if h := strings.Join(historyEvents(vc), "; "); !strings.Contains(h, "Steady -restore-requested-> Restoring") || !strings.Contains(h, "Restoring -restore-complete-> Steady") {
		t.Errorf("history does not show the restore: %s", h)
	}
	c = writable(t, vc)
	if got, _ := dumpDigest(t, ctx, c); got != atSnapshot {
		// writable wrote its probe key again, with the same value as before the snapshot.
		t.Errorf("through the client Service the data differs from the snapshot")
	}

	// Into a new cluster of another name.
	cp := newCluster(ns, "shop-copy", v1alpha1.TopologyReplication, 2)
	cp.Spec.RestoreFrom = &v1alpha1.RestoreSource{Backup: "snap"}
	if err := k.Create(ctx, cp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "shop-copy", 3*time.Minute, "restored", restorePhase("Completed"))
	cp = waitFor(t, ns, "shop-copy", time.Minute, "Steady with 2 ready", steadyWith(2))
	if h := historyEvents(cp); len(h) == 0 || h[0] != "Bootstrapping -restore-requested-> Restoring" {
		t.Errorf("the new cluster's history: %v; want Bootstrapping to Restoring first, never Steady before the load", h)
	}
	for i, d := range nodeDigests(t, ctx, cp) {
		if d != atSnapshot {
			t.Errorf("the new cluster's pod %s holds other data than the snapshot", cp.Status.Nodes[i].Pod)
		}
	}

	// Refused: a flipped byte; a path with no backup. The cluster keeps its data and serves.
	fill(t, ctx, c, "after-restore", 50)
	before, _ := dumpDigest(t, ctx, c)
	if err := k.Create(ctx, newBackup(ns, "snap2", "shop")); err != nil {
		t.Fatal(err)
	}
	vb := waitBackup(t, ns, "snap2", 2*time.Minute, "Completed", phase(v1alpha1.BackupCompleted))
	corrupt(t, ctx, store, path.Join(vb.Status.Path, vb.Status.Shards[0].File))
	if err := k.Create(ctx, newBackup(ns, "snap3", "shop")); err != nil {
		t.Fatal(err)
	}
	vb = waitBackup(t, ns, "snap3", 2*time.Minute, "Completed", phase(v1alpha1.BackupCompleted))
	truncate(t, ctx, store, path.Join(vb.Status.Path, vb.Status.Shards[0].File))
	for _, rf := range []struct {
		source v1beta1.RestoreSource
		dir    string
		why    string
	}{
		{v1beta1.RestoreSource{Backup: "snap2"}, "snap2", "sha256"},
		{v1beta1.RestoreSource{Backup: "snap3"}, "snap3", "bytes, the backup recorded"},
		{v1beta1.RestoreSource{Store: hubStore(spec), Path: ns + "/shop/never-taken"}, "never-taken", "incomplete"},
	} {
		restoreInPlace(t, ctx, ns, "shop", rf.source)
		id := "s3://backups/team-a/" + ns + "/shop/" + rf.dir + "/"
		vc = waitFor(t, ns, "shop", time.Minute, "refusing the restore of "+rf.dir, func(vc *v1alpha1.ValkeyCluster) bool {
			return vc.Status.Restore != nil && vc.Status.Restore.Phase == "Refused" && vc.Status.Restore.ID == id
		})
		if !strings.Contains(vc.Status.Restore.Reason, rf.why) || vc.Status.State != v1alpha1.StateSteady {
			t.Errorf("refused with %q in state %s; want a reason with %q, Steady", vc.Status.Restore.Reason, vc.Status.State, rf.why)
		}
		if err := c.Do(ctx, c.B().Set().Key("still").Value("serving").Build()).Error(); err != nil {
			t.Fatalf("the cluster stopped serving writes while refusing a restore: %v", err)
		}
		if err := c.Do(ctx, c.B().Del().Key("still").Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if after, _ := dumpDigest(t, ctx, c); after != before {
		t.Error("a refused restore changed the data")
	}
	if !eventSeen(t, ctx, ns, "shop", "RestoreRefused") {
		t.Error("no RestoreRefused Event")
	}
}

// backedUpThenChanged writes keys keys through c, takes the backup snap of cluster, then
// overwrites the first overwrites of them and adds later others; it returns the digest and key
// count at the snapshot, and fails when the later writes left the data as it was (a restore
// would then prove nothing).
func backedUpThenChanged(t *testing.T, ctx context.Context, ns, cluster string, c vk.Client, keys, overwrites, later int) (string, int) {
	t.Helper()
	fill(t, ctx, c, "k", keys)
	atSnapshot, n := dumpDigest(t, ctx, c)
	if err := k.Create(ctx, newBackup(ns, "snap", cluster)); err != nil {
		t.Fatal(err)
	}
	waitBackup(t, ns, "snap", 2*time.Minute, "Completed", phase(v1alpha1.BackupCompleted))
	fill(t, ctx, c, "k", overwrites)
	fill(t, ctx, c, "later", later)
	if d, _ := dumpDigest(t, ctx, c); d == atSnapshot {
		t.Fatal("the writes after the backup did not change the data: the test would prove nothing")
	}
	return atSnapshot, n
}

// corrupt flips a byte in the middle of an object of the store.
func corrupt(t *testing.T, ctx context.Context, store backup.Store, name string) {
	t.Helper()
	rewrite(t, ctx, store, name, func(data []byte) []byte {
		data[len(data)/2] ^= 0x10
		return data
	})
}

// truncate cuts an object of the store to its first half.
func truncate(t *testing.T, ctx context.Context, store backup.Store, name string) {
	t.Helper()
	rewrite(t, ctx, store, name, func(data []byte) []byte { return data[:len(data)/2] })
}

// rewrite replaces an object of the store with edit of its content.
func rewrite(t *testing.T, ctx context.Context, store backup.Store, name string, edit func([]byte) []byte) {
	t.Helper()
	out, err := store.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(store.Key(name))})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(out.Body); err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	data := edit(buf.Bytes())
	if _, err := store.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(store.Key(name)), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
}

// TestAStandaloneClusterIsRestoredInPlace: the one-pod topology goes through Restoring too: a
// backup, more writes and overwrites, restoreFrom, and the pod holds exactly the data at the
// snapshot again and takes writes afterwards.
func TestAStandaloneClusterIsRestoredInPlace(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 4*time.Minute)
	spec, _ := s3Store(t, ctx, ns)
	vc := backedUpCluster(t, ctx, ns, "solo", 1, spec, nil)
	c := writable(t, vc)
	atSnapshot, _ := backedUpThenChanged(t, ctx, ns, "solo", c, 500, 100, 100)
	restoreInPlace(t, ctx, ns, "solo", v1beta1.RestoreSource{Backup: "snap"})
	waitFor(t, ns, "solo", 3*time.Minute, "restored", restorePhase("Completed"))
	vc = waitFor(t, ns, "solo", time.Minute, "Steady with 1 ready", steadyWith(1))
	if d := nodeDigests(t, ctx, vc); len(d) != 1 || d[0] != atSnapshot {
		t.Fatalf("the pod holds other data than at the snapshot")
	}
	if h := strings.Join(historyEvents(vc), "; "); !strings.Contains(h, "Steady -restore-requested-> Restoring") {
		t.Errorf("history does not show the restore: %s", h)
	}
	c = writable(t, vc)
	if err := c.Do(ctx, c.B().Set().Key("after").Value("restore").Build()).Error(); err != nil {
		t.Fatalf("no write after the restore: %v", err)
	}
}
