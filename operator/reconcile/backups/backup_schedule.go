package backups

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// Labels and annotations of the ValkeyBackups the schedule creates.
const (
	// LabelScheduled marks a backup the schedule created: retention prunes only those.
	LabelScheduled = "valkey.fsm.dev/scheduled"
	// AnnotationScheduledAt is the schedule's time the backup was created for (RFC 3339).
	AnnotationScheduledAt = "valkey.fsm.dev/scheduled-at"
)

// BackupScheduler creates a ValkeyBackup at each time of a cluster's spec.backup.schedule and
// prunes scheduled backups beyond spec.backup.retention. Missed times (the operator was down)
// give one backup, for the newest of them, as a CronJob does. A backup's name is the cluster's
// and the scheduled time's, so a schedule time creates one backup however often this runs.
type BackupScheduler struct {
	Base
}

func (s *BackupScheduler) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("valkeybackup-schedule").
		For(&v1beta1.ValkeyCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A backup that completes may put one beyond retention.
		Watches(&v1beta1.ValkeyBackup{}, handler.EnqueueRequestsFromMapFunc(backupToCluster)).
		Complete(s)
}

func backupToCluster(_ context.Context, o client.Object) []ctrl.Request {
	vb, ok := o.(*v1beta1.ValkeyBackup)
	if !ok || vb.Labels[LabelScheduled] != "true" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: vb.Namespace, Name: vb.Spec.Cluster}}}
}

// ScheduleRefused says why spec.backup.schedule schedules nothing although the API server took
// it (CEL checks its shape; cron refuses, say, "99 * * * *"): for status.waiting, where the
// cluster's reconcile puts it, and the scheduler's Event ("": it schedules, or asks for nothing).
func ScheduleRefused(vc *v1beta1.ValkeyCluster) string {
	b := vc.Spec.Backup
	if b == nil || b.Schedule == "" || b.Suspend {
		return ""
	}
	if _, err := cron.ParseStandard(b.Schedule); err != nil {
		return fmt.Sprintf("spec.backup.schedule %q: %v; no backup is scheduled until it is fixed", b.Schedule, err)
	}
	return ""
}

// Reconcile creates the backup that is due, prunes, and comes back at the next time.
func (s *BackupScheduler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var vc v1beta1.ValkeyCluster
	if err := s.Client.Get(ctx, req.NamespacedName, &vc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if vc.Spec.Backup == nil || !vc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var list v1beta1.ValkeyBackupList
	if err := s.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{kube.LabelCluster: vc.Name, LabelScheduled: "true"}); err != nil {
		return ctrl.Result{}, err
	}
	pruneErr := s.prune(ctx, &vc, list.Items)
	spec := vc.Spec.Backup
	if spec.Schedule == "" || spec.Suspend {
		return ctrl.Result{}, pruneErr
	}
	sched, err := cron.ParseStandard(spec.Schedule)
	if err != nil {
		s.event(&vc, corev1.EventTypeWarning, "BackupScheduleInvalid", "%s", ScheduleRefused(&vc))
		return ctrl.Result{}, pruneErr
	}
	now := s.now().UTC()
	last := vc.CreationTimestamp.UTC()
	for _, b := range list.Items {
		if t, err := time.Parse(time.RFC3339, b.Annotations[AnnotationScheduledAt]); err == nil && t.After(last) {
			last = t
		}
	}
	due := dueTime(sched, last, now)
	if !due.IsZero() {
		if err := s.create(ctx, &vc, due); err != nil {
			return ctrl.Result{}, err
		}
	}
	// From now, not from the last time: a requeue in the past is no requeue at all.
	return ctrl.Result{RequeueAfter: sched.Next(now).Sub(now) + time.Second}, pruneErr
}

// dueTime is the newest time of the schedule after last and at or before now (zero: none). A
// schedule missed for long (every second, the operator down for a month) is not walked time by
// time: the window before now doubles until it holds a time of the schedule, so the walk is
// about as long as the schedule's own period, whatever the gap.
func dueTime(sched cron.Schedule, last, now time.Time) time.Time {
	for window := time.Minute; ; window *= 2 {
		from := now.Add(-window)
		if !from.After(last) {
			from = last
		}
		var due time.Time
		for t := sched.Next(from); !t.IsZero() && !t.After(now); t = sched.Next(t) {
			due = t
		}
		if !due.IsZero() || from.Equal(last) || window > 5*366*24*time.Hour {
			return due
		}
	}
}

// create makes the ValkeyBackup of scheduled time at; one that exists is fine (another turn, or
// the operator before a restart, made it).
func (s *BackupScheduler) create(ctx context.Context, vc *v1beta1.ValkeyCluster, at time.Time) error {
	vb := &v1beta1.ValkeyBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%s", vc.Name, at.Format("20060102-150405")), Namespace: vc.Namespace,
			Labels:      map[string]string{kube.LabelCluster: vc.Name, LabelScheduled: "true"},
			Annotations: map[string]string{AnnotationScheduledAt: at.Format(time.RFC3339)},
		},
		Spec: v1beta1.ValkeyBackupSpec{Cluster: vc.Name},
	}
	if err := s.Client.Create(ctx, vb); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("creating the scheduled backup %s: %w", vb.Name, err)
	}
	s.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "backup").Inc()
	s.event(vc, corev1.EventTypeNormal, "BackupScheduled", "created ValkeyBackup %s for the schedule's time %s", vb.Name, at.Format(time.RFC3339))
	return nil
}

// prune deletes the scheduled backups retention does not keep: completed ones beyond the newest
// count or older than maxAge (never the newest completed one), and failed ones with no attempt
// left that are older than the oldest completed one kept. Each loses its objects in the store
// first, then its ValkeyBackup; a deletion that fails is tried again on the next turn.
func (s *BackupScheduler) prune(ctx context.Context, vc *v1beta1.ValkeyCluster, backups []v1beta1.ValkeyBackup) error {
	ret := vc.Spec.Backup.Retention
	count := v1beta1.DefaultBackupRetention
	if ret.Count != nil {
		count = *ret.Count
	}
	var completed []v1beta1.ValkeyBackup
	for _, b := range backups {
		if b.Status.Phase == v1beta1.BackupCompleted && b.Status.CompletedAt != nil {
			completed = append(completed, b)
		}
	}
	sort.Slice(completed, func(i, j int) bool {
		return completed[i].Status.CompletedAt.After(completed[j].Status.CompletedAt.Time)
	})
	now := s.now()
	var drop []v1beta1.ValkeyBackup
	var oldestKept time.Time
	for i, b := range completed {
		tooOld := ret.MaxAge != nil && now.Sub(b.Status.CompletedAt.Time) > ret.MaxAge.Duration
		if i > 0 && (int32(i) >= count || tooOld) {
			drop = append(drop, b)
			continue
		}
		oldestKept = b.CreationTimestamp.Time
	}
	for _, b := range backups {
		if b.Status.Phase == v1beta1.BackupFailed && b.Status.NextAttemptAt == nil && !oldestKept.IsZero() && b.CreationTimestamp.Time.Before(oldestKept) {
			drop = append(drop, b)
		}
	}
	restoring, err := s.restoreSources(ctx, vc.Namespace)
	if err != nil {
		return err
	}
	for i := range drop {
		if restoring[drop[i].Name] || (drop[i].Status.Path != "" && restoring["path:"+drop[i].Status.Path]) {
			continue // a cluster restores from it, or names it to
		}
		if err := s.pruneOne(ctx, vc, &drop[i]); err != nil {
			s.event(vc, corev1.EventTypeWarning, "BackupPruneFailed", "%v (tried again on the next turn)", err)
			return err
		}
	}
	return nil
}

// restoreSources are the backups retention keeps whatever their age: those a cluster of the
// namespace names in spec.restoreFrom (by name), and those whose directory a cluster's restore
// reads or read ("path:" and the path): a restore under way must find its snapshot.
func (s *BackupScheduler) restoreSources(ctx context.Context, namespace string) (map[string]bool, error) {
	var clusters v1beta1.ValkeyClusterList
	if err := s.Client.List(ctx, &clusters, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, c := range clusters.Items {
		if rf := c.Spec.RestoreFrom; rf != nil {
			if rf.Backup != "" {
				out[rf.Backup] = true
			}
			if rf.Path != "" {
				out["path:"+rf.Path] = true
			}
		}
		if rs := c.Status.Restore; rs != nil && rs.Path != "" {
			out["path:"+rs.Path] = true
		}
	}
	return out, nil
}

func (s *BackupScheduler) pruneOne(ctx context.Context, vc *v1beta1.ValkeyCluster, b *v1beta1.ValkeyBackup) error {
	objects := 0
	if b.Status.Store != nil && b.Status.Path != "" {
		store, err := s.Stores.Open(ctx, b.Namespace, *b.Status.Store)
		if err != nil {
			return fmt.Errorf("pruning backup %s: %w", b.Name, err)
		}
		if objects, err = backup.DeleteBackup(ctx, store, b.Status.Path); err != nil {
			return fmt.Errorf("pruning backup %s: %w", b.Name, err)
		}
	}
	if err := s.Client.Delete(ctx, b); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("pruning backup %s: %w", b.Name, err)
	}
	s.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "backup-prune").Inc()
	s.event(vc, corev1.EventTypeNormal, "BackupPruned", "retention: deleted ValkeyBackup %s (%s) and its %d object(s) in %s", b.Name, b.Status.Phase, objects, b.Status.Location)
	logFrom(ctx).Info("backup pruned", "backup", b.Name, "phase", b.Status.Phase, "objects", objects)
	return nil
}
