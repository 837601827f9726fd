package backups

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
)

// +kubebuilder:rbac:groups=valkey.fsm.dev,resources=valkeybackups,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=valkey.fsm.dev,resources=valkeybackups/status,verbs=patch

// BackupReconciler takes the backups that ValkeyBackups ask for. It runs them in the operator
// itself rather than in a Job: the operator already reaches every node with the replication
// user's password and knows from its last survey which replica is in sync, the snapshot streams
// from the node to the store through memory (no volume to size), and a backup's progress and
// failure land in its status without a second program to watch. One backup runs per cluster at
// a time; each is read from a replica that is in sync (the primary only when there is none), so
// the primary's clients do not share it with a full sync.
//
// A backup is not one of the machine's actions: it reads a snapshot the way a replica does and
// changes nothing on the nodes, so it needs no transition; it waits for the cluster to be
// Steady so that it reads the shards the machine has recorded.
type BackupReconciler struct {
	Base
	// Clusters lends the cluster controller's last look at each cluster and its connections.
	Clusters Clusters
	// Runner names this operator process in status.runner: a backup Running under another
	// name was interrupted by an operator that stopped.
	Runner string
	// Valkey says how nodes are reached (the source address snapshots are read from).
	Valkey valkey.Options
	// MaxAttempts is how many attempts a backup gets (default 3); BackOff the wait after the
	// first failed one, doubled after each (default 30 s).
	MaxAttempts int32
	BackOff     time.Duration

	// started is when this process started: a multipart upload begun before it belongs to
	// no backup in progress (one interrupted by an operator restart) and is aborted.
	started time.Time
	// base is the manager's context once it runs as leader: attempts run on it, not on one
	// reconcile's context, and stop with the operator.
	base chan context.Context

	mu sync.Mutex
	// running maps each cluster with a backup in progress to that backup.
	running map[types.NamespacedName]string
}

// Clusters is what the backups need of the cluster controller: what its last turn saw of a
// cluster (a backup is read from the replicas that turn found in sync) and a connection to
// the cluster's nodes.
type Clusters interface {
	LastLook(cluster types.UID) shared.Look
	Pool(cluster types.UID, password string) *valkey.Pool
}

// Setup registers the backup controller and the schedule controller.
func Setup(mgr ctrl.Manager, b *BackupReconciler) error {
	b.started, b.base, b.running = time.Now(), make(chan context.Context, 1), map[types.NamespacedName]string{}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		b.base <- ctx
		<-ctx.Done()
		return nil
	})); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("valkeybackup").For(&v1beta1.ValkeyBackup{}).Complete(b); err != nil {
		return err
	}
	return (&BackupScheduler{Base: b.Base}).setup(mgr)
}

func (b *BackupReconciler) defaultsOf() (int32, time.Duration) {
	attempts, backOff := b.MaxAttempts, b.BackOff
	if attempts <= 0 {
		attempts = 3
	}
	if backOff <= 0 {
		backOff = 30 * time.Second
	}
	return attempts, backOff
}

// baseContext is the manager's context, once the leader's runnables started.
func (b *BackupReconciler) baseContext() context.Context {
	select {
	case ctx := <-b.base:
		b.base <- ctx
		return ctx
	default:
		return nil
	}
}

// Reconcile starts a backup's next attempt when it is due and the cluster is ready for one.
func (b *BackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var vb v1beta1.ValkeyBackup
	if err := b.Client.Get(ctx, req.NamespacedName, &vb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	clusterKey := types.NamespacedName{Namespace: vb.Namespace, Name: vb.Spec.Cluster}
	if err := b.backfillReady(ctx, &vb); err != nil {
		return ctrl.Result{}, err
	}
	switch vb.Status.Phase {
	case v1beta1.BackupCompleted:
		return ctrl.Result{}, b.recordNewestBackup(ctx, clusterKey)
	case v1beta1.BackupRunning:
		if b.runs(clusterKey, vb.Name) {
			return ctrl.Result{}, nil // its attempt writes the outcome
		}
		// Running, but not here: the operator that ran it stopped in the middle.
		why := "the attempt was interrupted: the operator running it stopped (its partial upload is aborted before the next attempt)"
		if vb.Status.Runner == b.Runner {
			why = "the attempt was interrupted"
		}
		return ctrl.Result{RequeueAfter: 10 * time.Millisecond}, b.finish(ctx, &vb, nil, errors.New(why))
	case v1beta1.BackupFailed:
		if vb.Status.NextAttemptAt == nil {
			return ctrl.Result{}, nil
		}
		if wait := vb.Status.NextAttemptAt.Sub(b.now()); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	base := b.baseContext()
	if base == nil {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	var vc v1beta1.ValkeyCluster
	if err := b.Client.Get(ctx, clusterKey, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			return b.pending(ctx, &vb, fmt.Sprintf("the ValkeyCluster %s does not exist", vb.Spec.Cluster), 30*time.Second)
		}
		return ctrl.Result{}, err
	}
	if vc.Spec.Backup == nil {
		return b.pending(ctx, &vb, fmt.Sprintf("the ValkeyCluster %s has no spec.backup: set spec.backup.store to say where its backups go", vc.Name), 30*time.Second)
	}
	if vc.Status.State != v1beta1.StateSteady {
		return b.pending(ctx, &vb, fmt.Sprintf("waiting for %s to be Steady (it is %s)", vc.Name, orNone(string(vc.Status.State))), 5*time.Second)
	}
	if other := b.runningFor(clusterKey); other != "" {
		return b.pending(ctx, &vb, fmt.Sprintf("waiting for backup %s of %s to finish", other, vc.Name), 5*time.Second)
	}
	look := b.Clusters.LastLook(vc.UID)
	if look.At.IsZero() || b.now().Sub(look.At) > 30*time.Second || look.Next.State != machine.Steady {
		return b.pending(ctx, &vb, fmt.Sprintf("waiting for the operator to survey %s", vc.Name), 5*time.Second)
	}
	// From here on, a refusal is a failed attempt: it is counted and backs off.
	dir := shared.BackupPath(vb.Namespace, vc.Name, vb.Name)
	spec := vc.Spec.Backup.Store
	v1beta1.SetStoreDefaults(&spec)
	// refusal is why this attempt cannot stream; it is recorded as the attempt's failure once
	// the attempt itself is recorded.
	store, refusal := b.Stores.Open(ctx, vb.Namespace, spec)
	var sources []backup.ShardSource
	if refusal == nil {
		sources, refusal = backup.Sources(look.Obs, look.Next.Shards, valkey.UserOperator, look.Passwords.Operator)
	}
	if refusal == nil {
		pool := b.Clusters.Pool(vc.UID, look.Passwords.Operator)
		for i, s := range sources {
			// A replica is read only once it holds every write its primary had when the
			// backup began; else the primary is.
			if s.IP != s.PrimaryIP {
				if err := pool.CaughtUp(ctx, s.PrimaryIP, s.IP, 5*time.Second); err != nil {
					logFrom(ctx).Info("backup reads the primary: its replica is behind", "shard", s.Index, "replica", s.Node, "why", err.Error())
					sources[i].Node, sources[i].IP, sources[i].Addr = s.Primary, s.PrimaryIP, valkey.Addr(s.PrimaryIP)
					s = sources[i]
				}
			}
			if err := pool.AllowSnapshots(ctx, s.IP); err != nil {
				refusal = fmt.Errorf("shard %d (%s): letting the operator read a snapshot: %w", s.Index, s.Node, err)
				break
			}
		}
	}
	before := vb.DeepCopy()
	now := metav1.NewTime(b.now())
	vb.Status.Phase = v1beta1.BackupRunning
	vb.Status.Attempts++
	vb.Status.StartedAt = &now
	vb.Status.CompletedAt = nil
	vb.Status.NextAttemptAt = nil
	vb.Status.Reason = ""
	vb.Status.Runner = b.Runner
	vb.Status.Store = &spec
	vb.Status.Path = dir
	vb.Status.Location = store.Location(dir + "/")
	vb.Status.Mode = backupModeOf(look.Obs.Spec.Mode)
	// The nodes being read, for whoever watches a long backup; completion fills in the rest.
	vb.Status.Shards, vb.Status.Size = nil, 0
	for _, src := range sources {
		vb.Status.Shards = append(vb.Status.Shards, v1beta1.BackupShard{Index: int32(src.Index), Node: src.Node, Slots: shared.RangesText(src.Slots)})
	}
	setBackupReady(&vb.Status, vb.Generation, now.Time)
	if err := b.Client.Status().Patch(ctx, &vb, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: 10 * time.Millisecond}, nil
		}
		return ctrl.Result{}, err
	}
	if refusal != nil {
		return ctrl.Result{}, b.finish(ctx, &vb, nil, refusal)
	}
	pool := b.Clusters.Pool(vc.UID, look.Passwords.Operator)
	for i := range sources {
		sources[i].LocalAddr = b.Valkey.LocalAddr()
		sources[i].Addr, sources[i].TLS = pool.TLSOf(sources[i].IP)
	}
	version := versionOf(look.Obs, sources)
	b.start(clusterKey, vb.Name)
	b.Recorder.Eventf(&vb, &vc, corev1.EventTypeNormal, "BackupStarted", "Backup", "attempt %d: streaming %d shard(s) of %s to %s (credentials: %s)", vb.Status.Attempts, len(sources), vc.Name, vb.Status.Location, store.CredentialsSource())
	logFrom(ctx).Info("backup started", "backup", vb.Name, "attempt", vb.Status.Attempts, "location", vb.Status.Location, "sources", sourceNames(sources), "credentials", store.CredentialsSource())
	go b.run(base, vb.DeepCopy(), clusterKey, store, dir, version, sources)
	return ctrl.Result{}, nil
}

// run is one attempt: abort what interrupted attempts left in the store, stream every shard,
// write the manifest, record the outcome.
func (b *BackupReconciler) run(ctx context.Context, vb *v1beta1.ValkeyBackup, cluster types.NamespacedName, store backup.Store, dir, version string, sources []backup.ShardSource) {
	defer b.stop(cluster)
	log := ctrl.LoggerFrom(ctx).WithValues("backup", vb.Name, "namespace", vb.Namespace)
	// One backup of a cluster runs at a time, so an upload under the cluster's directory that
	// is not this attempt's was left by an interrupted one (an operator killed mid-stream cannot
	// abort its own). Scoped to the cluster's directory, and with no cutoff that compares the
	// store's clock with ours, it touches nobody else's upload.
	scoped := store
	scoped.Prefix = store.Key(path.Dir(dir) + "/")
	if n, err := backup.AbortStale(ctx, scoped, time.Now().Add(24*time.Hour)); err != nil {
		log.Info("could not abort stale uploads (they are tried again before the next backup)", "error", err.Error())
	} else if n > 0 {
		log.Info("aborted multipart uploads left by interrupted backups", "count", n)
	}
	m, err := backup.TakeAll(ctx, store, dir, cluster.Name, machineModeOf(vb.Status.Mode), version, sources, b.now)
	if ctx.Err() != nil {
		return // the operator stops: its successor finds the attempt interrupted
	}
	if err := b.finish(ctx, vb, &m, err); err != nil {
		log.Error(err, "recording the backup's outcome")
	}
}

// finish records an attempt's outcome: Completed with its files, or Failed with the reason and
// the next attempt's time while attempts are left.
func (b *BackupReconciler) finish(ctx context.Context, vb *v1beta1.ValkeyBackup, m *backup.Manifest, failure error) error {
	maxAttempts, backOff := b.defaultsOf()
	key := client.ObjectKeyFromObject(vb)
	for try := 0; ; try++ {
		var cur v1beta1.ValkeyBackup
		if err := b.apiReader().Get(ctx, key, &cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		if cur.Status.Phase != v1beta1.BackupRunning || cur.Status.Attempts != vb.Status.Attempts || cur.Status.Runner != vb.Status.Runner {
			// Another attempt's record (the cache was behind when this one was judged
			// interrupted): not this attempt's to end.
			return nil
		}
		before := cur.DeepCopy()
		now := metav1.NewTime(b.now())
		if failure == nil {
			cur.Status.Phase = v1beta1.BackupCompleted
			cur.Status.CompletedAt = &now
			cur.Status.Reason = ""
			cur.Status.ValkeyVersion = m.ValkeyVersion
			cur.Status.Shards = nil
			cur.Status.Size = 0
			for _, s := range m.Shards {
				cur.Status.Shards = append(cur.Status.Shards, v1beta1.BackupShard{
					Index: int32(s.Index), Node: s.Node, Slots: shared.RangesText(s.Slots), File: s.File, Size: s.Size, SHA256: s.SHA256, RDBVersion: s.RDBVersion,
				})
				cur.Status.Size += s.Size
			}
		} else {
			cur.Status.Phase = v1beta1.BackupFailed
			cur.Status.Reason = failure.Error()
			cur.Status.NextAttemptAt = nil
			if cur.Status.Attempts < maxAttempts {
				wait := backOff << (max(cur.Status.Attempts, 1) - 1)
				next := metav1.NewTime(now.Add(wait))
				cur.Status.NextAttemptAt = &next
			}
		}
		setBackupReady(&cur.Status, cur.Generation, now.Time)
		err := b.Client.Status().Patch(ctx, &cur, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) && try < 5 {
			continue
		}
		if err != nil {
			return err
		}
		b.reportOutcome(&cur, failure)
		return nil
	}
}

// backfillReady writes the Ready condition and sizeHuman of a backup whose status was last
// written without them (by an operator that wrote only its phase), so that kubectl wait and
// the Size column work for backups taken before too.
func (b *BackupReconciler) backfillReady(ctx context.Context, vb *v1beta1.ValkeyBackup) error {
	if vb.Status.Phase == "" || meta.FindStatusCondition(vb.Status.Conditions, v1beta1.ConditionBackupReady) != nil {
		return nil
	}
	before := vb.DeepCopy()
	setBackupReady(&vb.Status, vb.Generation, b.now())
	return client.IgnoreNotFound(b.Client.Status().Patch(ctx, vb, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
}

// reportOutcome writes the Event, the log line and the metrics of a finished attempt.
func (b *BackupReconciler) reportOutcome(vb *v1beta1.ValkeyBackup, failure error) {
	var vc v1beta1.ValkeyCluster
	related := client.Object(nil)
	if b.Client.Get(context.Background(), types.NamespacedName{Namespace: vb.Namespace, Name: vb.Spec.Cluster}, &vc) == nil {
		related = &vc
	}
	if failure == nil {
		b.Recorder.Eventf(vb, related, corev1.EventTypeNormal, "BackupCompleted", "Backup", "%d shard(s), %d bytes, in %s, verified (sha256, RDB structure and checksum)", len(vb.Status.Shards), vb.Status.Size, vb.Status.Location)
		b.Metrics.Backups.WithLabelValues(vb.Namespace, vb.Spec.Cluster, "completed").Inc()
		b.Metrics.BackupLastCompleted.WithLabelValues(vb.Namespace, vb.Spec.Cluster).Set(float64(vb.Status.CompletedAt.Unix()))
		b.Metrics.BackupLastSize.WithLabelValues(vb.Namespace, vb.Spec.Cluster).Set(float64(vb.Status.Size))
		return
	}
	next := "no attempts left"
	if vb.Status.NextAttemptAt != nil {
		next = "next attempt at " + vb.Status.NextAttemptAt.UTC().Format(time.RFC3339)
	}
	b.Recorder.Eventf(vb, related, corev1.EventTypeWarning, "BackupFailed", "Backup", "attempt %d: %v (%s)", vb.Status.Attempts, failure, next)
	b.Metrics.Backups.WithLabelValues(vb.Namespace, vb.Spec.Cluster, "failed").Inc()
}

// pending records why a backup has not started and looks again after.
func (b *BackupReconciler) pending(ctx context.Context, vb *v1beta1.ValkeyBackup, why string, after time.Duration) (ctrl.Result, error) {
	if vb.Status.Phase == v1beta1.BackupFailed {
		// A failed backup waiting for its next attempt keeps its failure's reason.
		return ctrl.Result{RequeueAfter: after}, nil
	}
	if vb.Status.Phase != v1beta1.BackupPending || vb.Status.Reason != why {
		before := vb.DeepCopy()
		vb.Status.Phase = v1beta1.BackupPending
		vb.Status.Reason = why
		setBackupReady(&vb.Status, vb.Generation, b.now())
		if err := b.Client.Status().Patch(ctx, vb, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		logFrom(ctx).Info("backup waits", "backup", vb.Name, "why", why)
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

func (b *BackupReconciler) runs(cluster types.NamespacedName, backup string) bool {
	return b.runningFor(cluster) == backup
}

func (b *BackupReconciler) runningFor(cluster types.NamespacedName) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.running[cluster]
}

func (b *BackupReconciler) start(cluster types.NamespacedName, backup string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running[cluster] = backup
}

func (b *BackupReconciler) stop(cluster types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.running, cluster)
}

// versionOf is the Valkey version of the nodes the snapshots are read from (several when a
// roll is half-way, which a Steady cluster is not).
func versionOf(obs machine.Observation, sources []backup.ShardSource) string {
	seen := map[string]bool{}
	var out []string
	for _, s := range sources {
		for _, n := range obs.Nodes {
			if n.Name == s.Node && n.Valkey.Version != "" && !seen[n.Valkey.Version] {
				seen[n.Valkey.Version] = true
				out = append(out, n.Valkey.Version)
			}
		}
	}
	return strings.Join(out, ",")
}

func sourceNames(sources []backup.ShardSource) []string {
	var out []string
	for _, s := range sources {
		out = append(out, s.Node)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "not started"
	}
	return s
}

// backupModeOf is the status.mode a backup of a cluster in mode m records: the API's
// PascalCase topology names for the machine's modes.
func backupModeOf(m machine.Mode) v1beta1.BackupMode {
	if m == machine.ModeCluster {
		return v1beta1.BackupModeCluster
	}
	return v1beta1.BackupModeReplication
}

// machineModeOf is backupModeOf's inverse, for the backup package, which lays the files out
// by the machine's mode.
func machineModeOf(m v1beta1.BackupMode) machine.Mode {
	if m == v1beta1.BackupModeCluster {
		return machine.ModeCluster
	}
	return machine.ModeReplication
}
