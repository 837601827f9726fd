package operatorsuite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	vk "github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/e2e/localproc"
	"github.com/valkey-fsm/valkey-operator/internal/oracle"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// The S3 server of these tests is versitygw running as a pod of the local cluster, from the
// manifest users try backups with (testdata/s3/versitygw.yaml).
const s3Manifest = "../../testdata/s3/versitygw.yaml"

// s3Store starts the manifest's S3 server in ns and returns the store spec a cluster names and,
// for the test's own checks, a client of the same bucket.
func s3Store(t *testing.T, ctx context.Context, ns string) (v1alpha1.BackupStore, backup.Store) {
	t.Helper()
	if _, err := cl.ApplyFile(ctx, s3Manifest, ns); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.WaitPodReady(ctx, ns, "s3", 2*time.Minute); err != nil {
		t.Fatalf("the S3 server's pod: %v", err)
	}
	var svc corev1.Service
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s3"}, &svc); err != nil {
		t.Fatal(err)
	}
	var sec corev1.Secret
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s3-credentials"}, &sec); err != nil {
		t.Fatal(err)
	}
	spec := v1alpha1.BackupStore{
		Bucket: "backups", Prefix: "team-a", Endpoint: fmt.Sprintf("http://%s:7070", svc.Spec.ClusterIP),
		ForcePathStyle: true, CredentialsSecret: "s3-credentials",
		AllowPlainHTTP: true, // versitygw serves plain HTTP in the local cluster
	}
	store := backup.Store{
		Endpoint: spec.Endpoint, AllowPlainHTTP: true, Region: "us-east-1", Bucket: spec.Bucket, Prefix: "team-a/", PathStyle: true,
		AccessKey: string(sec.Data["AWS_ACCESS_KEY_ID"]), SecretKey: string(sec.Data["AWS_SECRET_ACCESS_KEY"]),
	}
	return spec, store
}

// backedUpCluster creates a cluster named name of replicas pods (Standalone for one, else
// Replication) with spec.backup pointing at store, edit changing it first (nil: no change), and
// waits until it is Steady with every pod ready.
func backedUpCluster(t *testing.T, ctx context.Context, ns, name string, replicas int32, store v1alpha1.BackupStore, edit func(*v1alpha1.ValkeyCluster)) *v1alpha1.ValkeyCluster {
	t.Helper()
	topology := v1alpha1.TopologyReplication
	if replicas == 1 {
		topology = v1alpha1.TopologyStandalone
	}
	vc := newCluster(ns, name, topology, replicas)
	vc.Spec.Backup = &v1alpha1.BackupSpec{Store: store}
	if edit != nil {
		edit(vc)
	}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	return waitFor(t, ns, name, 2*time.Minute, fmt.Sprintf("Steady with %d ready", replicas), steadyWith(int(replicas)))
}

// waitBackup waits until the ValkeyBackup satisfies cond.
func waitBackup(t *testing.T, ns, name string, timeout time.Duration, what string, cond func(*v1alpha1.ValkeyBackup) bool) *v1alpha1.ValkeyBackup {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var vb v1alpha1.ValkeyBackup
	for {
		err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &vb)
		if err == nil && cond(&vb) {
			return &vb
		}
		if time.Now().After(deadline) {
			t.Fatalf("backup %s not %s within %s: %v, status %+v\n%s", name, what, timeout, err, vb.Status, operatorTrail(ns))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func phase(p v1alpha1.BackupPhase) func(*v1alpha1.ValkeyBackup) bool {
	return func(vb *v1alpha1.ValkeyBackup) bool { return vb.Status.Phase == p }
}

func newBackup(ns, name, cluster string) *v1alpha1.ValkeyBackup {
	return &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ValkeyBackupSpec{Cluster: cluster}}
}

// dumpDigest is the oracle of a data set (internal/oracle: every key's DUMP, keys sorted, read
// with the test's own client, not through the operator or the backup package) and its number
// of keys.
func dumpDigest(t *testing.T, ctx context.Context, c vk.Client) (string, int) {
	t.Helper()
	d, n, err := oracle.Digest(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return d, n
}

// fill writes n keys of several types under prefix.
func fill(t *testing.T, ctx context.Context, c vk.Client, prefix string, n int) {
	t.Helper()
	cmds := make(vk.Commands, 0, n)
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("%s:%d", prefix, i)
		switch i % 4 {
		case 0:
			cmds = append(cmds, c.B().Set().Key(key).Value(strings.Repeat("v", i%300)).Build())
		case 1:
			cmds = append(cmds, c.B().Hset().Key(key).FieldValue().FieldValue("f", fmt.Sprint(i)).FieldValue("g", "x").Build())
		case 2:
			cmds = append(cmds, c.B().Rpush().Key(key).Element("a", "b", fmt.Sprint(i)).Build())
		default:
			cmds = append(cmds, c.B().Zadd().Key(key).ScoreMember().ScoreMember(float64(i), "m").Build())
		}
	}
	for _, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
}

// loadedDigest starts a valkey-server of its own (127.242.0.0/24, outside the local cluster's
// ranges) on the RDB file data and returns dumpDigest of what it loaded: a second, independent
// reading of the snapshot.
func loadedDigest(t *testing.T, ctx context.Context, ip string, data []byte) (string, int) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, "valkey-check-rdb", filepath.Join(dir, "dump.rdb")).CombinedOutput(); err != nil {
		t.Fatalf("valkey-check-rdb refuses the stored snapshot: %v\n%s", err, out)
	}
	p := localproc.New(t, "oracle", ip, dir)
	p.Start(t, "valkey-server", "--bind", ip, "--port", fmt.Sprint(p.Port), "--dir", dir, "--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no")
	t.Cleanup(p.Kill)
	var c vk.Client
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err = vk.NewClient(vk.ClientOption{InitAddress: []string{p.Addr()}, DisableCache: true, ForceSingleClient: true})
		if err == nil && c.Do(ctx, c.B().Ping().Build()).Error() == nil {
			break
		}
		if c != nil {
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the oracle's valkey-server on %s did not answer: %v", p.Addr(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer c.Close()
	return dumpDigest(t, ctx, c)
}

// fetchObject reads an object of the store with the SDK and checks its size and sha256
// against the backup's status.
func fetchObject(t *testing.T, ctx context.Context, store backup.Store, vb *v1alpha1.ValkeyBackup, shard int) []byte {
	t.Helper()
	s := vb.Status.Shards[shard]
	out, err := store.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(store.Key(path.Join(vb.Status.Path, s.File)))})
	if err != nil {
		t.Fatalf("reading shard %d's object: %v", shard, err)
	}
	defer out.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(out.Body); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	if int64(buf.Len()) != s.Size || hex.EncodeToString(sum[:]) != s.SHA256 {
		t.Fatalf("shard %d's object: %d bytes, sha256 %x; status says %d bytes, %s", shard, buf.Len(), sum, s.Size, s.SHA256)
	}
	return buf.Bytes()
}

// objectsUnder lists the keys of the store below dir (relative to its prefix).
func objectsUnder(t *testing.T, ctx context.Context, store backup.Store, dir string) []string {
	t.Helper()
	out, err := store.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(store.Bucket), Prefix: aws.String(store.Key(dir))})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, strings.TrimPrefix(aws.ToString(o.Key), store.Prefix))
	}
	sort.Strings(keys)
	return keys
}

// TestABackupOnDemandIsAVerifiedSnapshotReadFromAReplica: a Replication cluster with
// spec.backup pointing at the in-cluster S3 server holds 2,000 keys of four types; a ValkeyBackup
// completes with one file read from a replica (not the primary), whose size and sha256 match
// what the store serves, which valkey-check-rdb accepts, and which, loaded into a valkey-server
// of the test's own, holds exactly the data set at the snapshot (digest of every key's DUMP).
// Writes made after it completed are not in it; the cluster stayed Steady throughout and the
// operator's metrics count the backup.
func TestABackupOnDemandIsAVerifiedSnapshotReadFromAReplica(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 4*time.Minute)
	spec, store := s3Store(t, ctx, ns)
	vc := backedUpCluster(t, ctx, ns, "orders", 3, spec, nil)
	c := writable(t, vc)
	fill(t, ctx, c, "k", 2000)
	if err := c.Do(ctx, c.B().Wait().Numreplicas(2).Timeout(5000).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	want, n := dumpDigest(t, ctx, c)

	if err := k.Create(ctx, newBackup(ns, "first", "orders")); err != nil {
		t.Fatal(err)
	}
	vb := waitBackup(t, ns, "first", 2*time.Minute, "Completed", phase(v1alpha1.BackupCompleted))
	fill(t, ctx, c, "after", 100)
	// What users script and read: kubectl wait on the Ready condition, the Size column.
	kubectlOut(t, ctx, "wait", "--for=condition=Ready", "vkb/first", "-n", ns, "--timeout=30s")
	if table, want := kubectlOut(t, ctx, "get", "vkb", "first", "-n", ns), v1beta1.HumanSize(vb.Status.Size); !strings.Contains(strings.Split(table, "\n")[0], "SIZE") || !strings.Contains(table, " "+want+" ") {
		t.Errorf("kubectl get vkb does not show the SIZE %s of a %d-byte backup:\n%s", want, vb.Status.Size, table)
	}

	st := vb.Status
	if st.Attempts != 1 || len(st.Shards) != 1 || st.Mode != "replication" || st.ValkeyVersion == "" || st.CompletedAt == nil || st.Runner == "" {
		t.Fatalf("status of a completed backup: %+v", st)
	}
	if wantLoc := fmt.Sprintf("s3://backups/team-a/%s/orders/first/", ns); st.Location != wantLoc || st.Path != ns+"/orders/first" {
		t.Errorf("location %q path %q, want %q", st.Location, st.Path, wantLoc)
	}
	vc = get(t, ns, "orders")
	if st.Shards[0].Node == vc.Status.Primary {
		t.Errorf("the snapshot was read from the primary %s with two replicas in sync", vc.Status.Primary)
	}
	data := fetchObject(t, ctx, store, vb, 0)
	got, m := loadedDigest(t, ctx, "127.242.0.1", data)
	if got != want || m != n {
		t.Fatalf("the stored snapshot holds %d keys (digest %.12s), the cluster held %d (digest %.12s)", m, got, n, want)
	}
	if keys := objectsUnder(t, ctx, store, st.Path+"/"); strings.Join(keys, " ") != st.Path+"/manifest.json "+st.Path+"/shard-0.rdb" {
		t.Errorf("the backup's directory holds %v", keys)
	}
	if vc.Status.State != v1alpha1.StateSteady {
		t.Errorf("the cluster is %s after the backup", vc.Status.State)
	}
	if !eventSeen(t, ctx, ns, "first", "BackupCompleted") {
		t.Error("no BackupCompleted Event about the backup")
	}
}

// TestScheduledBackupsAreCreatedAndPrunedByRetention: a one-pod cluster backed up every three
// seconds with retention of two: backups are created by the schedule, and the older ones lose
// their objects in the store and then their ValkeyBackup, so that two completed ones remain;
// a backup taken on demand meanwhile is kept whatever the retention. A schedule cron refuses
// (the right shape for CEL, "99 * * * *") is said in status.waiting and an Event.
func TestScheduledBackupsAreCreatedAndPrunedByRetention(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 4*time.Minute)
	spec, store := s3Store(t, ctx, ns)
	vc := backedUpCluster(t, ctx, ns, "cache", 1, spec, func(vc *v1alpha1.ValkeyCluster) {
		vc.Spec.Backup.Retention.Count = ptr.To[int32](2)
	})
	fill(t, ctx, writable(t, vc), "k", 200)
	if err := k.Create(ctx, newBackup(ns, "keep-me", "cache")); err != nil {
		t.Fatal(err)
	}
	waitBackup(t, ns, "keep-me", time.Minute, "Completed", phase(v1alpha1.BackupCompleted))

	vc = get(t, ns, "cache")
	vc.Spec.Backup.Schedule = "@every 3s"
	update(t, ctx, vc)
	seen := map[string]bool{}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var list v1alpha1.ValkeyBackupList
		if err := k.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		var completed []string
		for _, b := range list.Items {
			if b.Labels["valkey.fsm.dev/scheduled"] == "true" {
				seen[b.Name] = true
				if b.Status.Phase == v1alpha1.BackupCompleted {
					completed = append(completed, b.Name)
				}
			}
		}
		if len(seen) >= 5 && len(completed) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes: %d scheduled backups seen, %d completed ones now (%v)\n%s", len(seen), len(completed), completed, operatorTrail(ns))
		}
		time.Sleep(300 * time.Millisecond)
	}
	// Stop the schedule; once retention has settled (a backup started before the suspension
	// may still complete and push one out), the store holds exactly the kept backups.
	vc = get(t, ns, "cache")
	vc.Spec.Backup.Suspend = true
	update(t, ctx, vc)
	var kept []string
	var dirs map[string]bool
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		var list v1alpha1.ValkeyBackupList
		if err := k.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		kept, dirs = nil, map[string]bool{}
		settled := true
		for _, b := range list.Items {
			switch b.Status.Phase {
			case v1alpha1.BackupCompleted:
				kept = append(kept, b.Name)
			case v1alpha1.BackupFailed:
			default:
				settled = false
			}
		}
		for _, key := range objectsUnder(t, ctx, store, ns+"/cache/") {
			dirs[strings.Split(strings.TrimPrefix(key, ns+"/cache/"), "/")[0]] = true
		}
		same := len(dirs) == len(kept)
		for _, name := range kept {
			same = same && dirs[name]
		}
		if settled && same && len(kept) == 3 && dirs["keep-me"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("completed backups %v, backup directories in the store %v: want keep-me and the two newest scheduled ones, each with its directory", kept, dirs)
		}
	}
	if !eventSeen(t, ctx, ns, "cache", "BackupPruned") {
		t.Error("no BackupPruned Event about the cluster")
	}

	// A schedule of the right shape that cron refuses: said in status.waiting (and an Event).
	vc = get(t, ns, "cache")
	vc.Spec.Backup.Suspend = false
	vc.Spec.Backup.Schedule = "99 * * * *"
	update(t, ctx, vc)
	waitFor(t, ns, "cache", time.Minute, "status.waiting naming the refused schedule", func(vc *v1alpha1.ValkeyCluster) bool {
		return strings.Contains(vc.Status.Waiting, `spec.backup.schedule "99 * * * *"`)
	})
	if !eventSeen(t, ctx, ns, "cache", "BackupScheduleInvalid") {
		t.Error("no BackupScheduleInvalid Event")
	}
}

// TestABackupThatTheStoreRefusesFailsBacksOffAndSucceedsOnceFixed: wrong credentials make the
// attempt fail with the store's reason in status and a Warning Event, a next attempt is set
// (back-off), the cluster keeps serving writes; with the credentials fixed the next attempt
// completes.
func TestABackupThatTheStoreRefusesFailsBacksOffAndSucceedsOnceFixed(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "", func(c *manager.Config) { c.BackupBackOff = 3 * time.Second })
	ctx := ctxFor(t, 4*time.Minute)
	spec, _ := s3Store(t, ctx, ns)
	wrong := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wrong"}, StringData: map[string]string{"AWS_ACCESS_KEY_ID": "nobody", "AWS_SECRET_ACCESS_KEY": "nothing"}}
	if err := k.Create(ctx, wrong); err != nil {
		t.Fatal(err)
	}
	spec.CredentialsSecret = "wrong"
	vc := backedUpCluster(t, ctx, ns, "app", 1, spec, nil)
	c := writable(t, vc)
	if err := k.Create(ctx, newBackup(ns, "b1", "app")); err != nil {
		t.Fatal(err)
	}
	vb := waitBackup(t, ns, "b1", time.Minute, "Failed", phase(v1alpha1.BackupFailed))
	if vb.Status.NextAttemptAt == nil || !strings.Contains(vb.Status.Reason, "shard 0") || vb.Status.Attempts != 1 {
		t.Fatalf("a refused backup: %+v", vb.Status)
	}
	if err := c.Do(ctx, c.B().Set().Key("still").Value("serving").Build()).Error(); err != nil {
		t.Fatalf("the cluster stopped serving writes: %v", err)
	}
	if !eventSeen(t, ctx, ns, "b1", "BackupFailed") {
		t.Error("no BackupFailed Event")
	}
	vc = get(t, ns, "app")
	vc.Spec.Backup.Store.CredentialsSecret = "s3-credentials"
	update(t, ctx, vc)
	vb = waitBackup(t, ns, "b1", time.Minute, "Completed", phase(v1alpha1.BackupCompleted))
	if vb.Status.Attempts < 2 || vb.Status.Reason != "" {
		t.Errorf("completed after a failure: %+v", vb.Status)
	}
}

// eventSeen reports whether an Event with reason names the object.
func eventSeen(t *testing.T, ctx context.Context, ns, name, reason string) bool {
	t.Helper()
	return eventNote(t, ctx, ns, name, reason) != ""
}

// eventNote is the note of the first Event with reason about the object, waiting for one up to
// ten seconds ("" if none came).
func eventNote(t *testing.T, ctx context.Context, ns, name, reason string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		evs, err := cl.Clientset().EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				return e.Note
			}
		}
	}
	return ""
}
