package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
)

// The final backup of a deleted cluster (spec.deletion.finalBackup).
//
// While the finalizer holds the cluster, its turns go on (the machine keeps it healthy: a
// failover still happens) with Spec.CloseWrites: every recorded primary is closed to client
// writes and stays closed (machine/closewrites.go), its replicas catch up. Once a turn has
// seen every recorded primary of a Steady cluster closed, one ValkeyBackup is created, which
// the backup controller takes like any other (from a replica that caught up). The finalizer
// goes once it Completed. The backup is not owned by the cluster, so the garbage collector
// leaves it, and it carries no scheduled label, so retention never prunes it.
//
// Its name is the cluster's and the deletion's time: an operator restarted in the middle finds
// the backup it created rather than making a second one.

const (
	// LabelFinalBackup marks the ValkeyBackup taken when its cluster was deleted.
	LabelFinalBackup = "valkey.fsm.dev/final-backup"
	// AnnotationFinalBackupOf is the UID of the cluster whose deletion the backup was taken
	// for: a cluster of the same name created later is another cluster.
	AnnotationFinalBackupOf = "valkey.fsm.dev/final-backup-of"
)

// finalWaits remembers, per cluster being deleted, what its deletion waits for: the turn's
// report puts it first in status.waiting.
type finalWaits struct{ nodeMemory[string] }

const finalWaitKey = "final-backup"

func (m *finalWaits) get(cluster types.UID) string { return m.nodeMemory.get(cluster, finalWaitKey) }

func (m *finalWaits) set(cluster types.UID, why string) {
	m.nodeMemory.set(cluster, finalWaitKey, why)
}

// finalBackupName is the name of the backup taken when vc was deleted.
func finalBackupName(vc *v1beta1.ValkeyCluster) string {
	return fmt.Sprintf("%s-final-%s", vc.Name, vc.DeletionTimestamp.UTC().Format("20060102-150405"))
}

// deleting handles a cluster being deleted: with spec.deletion.finalBackup it keeps the cluster
// running, writes closed, until the final backup completed; then (or without it) it lets go.
func (r *Reconciler) deleting(ctx context.Context, vc *v1beta1.ValkeyCluster) (ctrl.Result, error) {
	letGo := func() (ctrl.Result, error) {
		r.finalWaits.Forget(vc.UID)
		return ctrl.Result{}, r.finalize(ctx, vc)
	}
	if !controllerutil.ContainsFinalizer(vc, Finalizer) {
		return letGo()
	}
	waited := strings.Contains(vc.Status.Waiting, "final backup")
	if vc.Spec.Deletion == nil || !vc.Spec.Deletion.FinalBackup || vc.Spec.Backup == nil || vc.Status.State == "" {
		if waited {
			// The user's way out of a wait: said, since the backup it waited for is not taken.
			r.event(vc, corev1.EventTypeWarning, "FinalBackupSkipped", "spec.deletion.finalBackup was removed: the cluster is deleted without its final backup")
		}
		return letGo()
	}
	going, err := r.objectsGoing(ctx, vc)
	if err != nil {
		return ctrl.Result{}, err
	}
	vb, why, err := r.finalBackup(ctx, vc, going == "")
	if err != nil {
		return ctrl.Result{}, err
	}
	if vb != nil && vb.Status.Phase == v1beta1.BackupCompleted {
		r.event(vc, corev1.EventTypeNormal, "FinalBackupCompleted", "final backup %s completed (%s); the cluster's objects go now", vb.Name, vb.Status.Location)
		return letGo()
	}
	switch {
	case going != "":
		why = going
	case why == "":
		why = finalBackupWaits(vb)
	}
	if !strings.Contains(vc.Status.Waiting, why) {
		typ, reason := corev1.EventTypeNormal, "FinalBackupWaiting"
		if going != "" || vb != nil && vb.Status.Phase == v1beta1.BackupFailed {
			typ, reason = corev1.EventTypeWarning, "FinalBackupFailed"
		}
		r.event(vc, typ, reason, "%s", why)
	}
	r.finalWaits.set(vc.UID, why)
	if going != "" {
		return r.retry(ctx, vc, r.waitFor(ctx, vc, why))
	}
	res, err := r.turn(ctx, vc)
	if err != nil {
		return r.retry(ctx, vc, err)
	}
	// The backup's progress wakes no turn of the cluster's: look at it at least this often.
	if res.RequeueAfter == 0 || res.RequeueAfter > 2*time.Second {
		res.RequeueAfter = 2 * time.Second
	}
	return res, nil
}

// objectsGoing says why the cluster's pods go before it ("": they do not). With foreground
// propagation the garbage collector deletes the StatefulSets before the cluster (and then
// drops the foregroundDeletion finalizer, so the StatefulSets' absence is what remains to
// see); one can also be deleted by hand. A cluster being deleted is not turned then: its turn
// would make the StatefulSets again, empty pods included, against the deletion asked for.
func (r *Reconciler) objectsGoing(ctx context.Context, vc *v1beta1.ValkeyCluster) (string, error) {
	const why = "deleting: the cluster's StatefulSet is deleted (by foreground propagation, or by hand) before the final backup could be read from its pods, and is not made again for a cluster being deleted: remove spec.deletion.finalBackup to let the deletion go (delete with the default background propagation to keep a final backup)"
	if controllerutil.ContainsFinalizer(vc, metav1.FinalizerDeleteDependents) {
		return why, nil
	}
	var list appsv1.StatefulSetList
	// The data nodes' StatefulSets only: the sentinels' (a Sentinel topology) hold no data.
	if err := r.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels(kube.SelectorLabels(vc))); err != nil {
		return "", err
	}
	owned := 0
	for i := range list.Items {
		if !metav1.IsControlledBy(&list.Items[i], vc) {
			continue
		}
		if list.Items[i].DeletionTimestamp != nil {
			return why, nil
		}
		owned++
	}
	if owned == 0 {
		return why, nil
	}
	return "", nil
}

// finalBackup finds the backup taken for vc's deletion, or (mayCreate) creates it once the
// last turn saw every recorded primary closed to client writes. Without one, why says what it
// waits for.
func (r *Reconciler) finalBackup(ctx context.Context, vc *v1beta1.ValkeyCluster, mayCreate bool) (*v1beta1.ValkeyBackup, string, error) {
	name := finalBackupName(vc)
	key := types.NamespacedName{Namespace: vc.Namespace, Name: name}
	var vb v1beta1.ValkeyBackup
	err := r.Client.Get(ctx, key, &vb)
	if err == nil {
		return r.ours(vc, &vb)
	}
	if !apierrors.IsNotFound(err) || !mayCreate {
		return nil, "", client.IgnoreNotFound(err)
	}
	if why := writesClosed(r.looks.get(vc.UID)); why != "" {
		return nil, "deleting: the final backup starts once client writes are closed: " + why + " (to delete the cluster without it, remove spec.deletion.finalBackup)", nil
	}
	vb = v1beta1.ValkeyBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: vc.Namespace,
			Labels:      map[string]string{kube.LabelCluster: vc.Name, LabelFinalBackup: "true"},
			Annotations: map[string]string{AnnotationFinalBackupOf: string(vc.UID)},
		},
		Spec: v1beta1.ValkeyBackupSpec{Cluster: vc.Name},
	}
	if err := r.Client.Create(ctx, &vb); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, "", fmt.Errorf("creating the final backup %s: %w", name, err)
		}
		// Created by an earlier turn the cache has not shown yet.
		if err := r.apiReader().Get(ctx, key, &vb); err != nil {
			return nil, "", err
		}
		return r.ours(vc, &vb)
	}
	r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "backup").Inc()
	r.event(vc, corev1.EventTypeNormal, "FinalBackupCreated", "client writes are closed: created ValkeyBackup %s; the deletion waits until it completed", name)
	return &vb, "", nil
}

// ours returns vb if it is vc's final backup, else says what is in the way.
func (r *Reconciler) ours(vc *v1beta1.ValkeyCluster, vb *v1beta1.ValkeyBackup) (*v1beta1.ValkeyBackup, string, error) {
	if vb.Annotations[AnnotationFinalBackupOf] != string(vc.UID) {
		return nil, fmt.Sprintf("deleting: a ValkeyBackup %s that is not this cluster's final backup is in the way of it: delete it, or remove spec.deletion.finalBackup to delete the cluster without a final backup", vb.Name), nil
	}
	return vb, "", nil
}

// writesClosed says why the final backup cannot start from what the last turn saw ("": every
// recorded primary of a Steady cluster answered closed to client writes).
func writesClosed(look shared.Look) string {
	switch {
	case look.At.IsZero():
		return "the operator has not surveyed the cluster yet"
	case look.Next.State == machine.Hibernated:
		return "the cluster is Hibernated: set spec.hibernate to false to wake it for the backup"
	case look.Next.State != machine.Steady:
		return fmt.Sprintf("the cluster is %s, and is backed up from Steady", look.Next.State)
	case len(look.Next.Shards) == 0:
		return "no shard has a primary yet"
	}
	for s, rec := range look.Next.Shards {
		n := nodeNamed(look.Obs, rec.Primary)
		switch {
		case n == nil || !n.Reachable || n.Valkey.RunID != rec.RunID:
			return fmt.Sprintf("shard %d's primary %s does not answer", s, rec.Primary)
		case !n.Valkey.WritesFenced:
			return fmt.Sprintf("closing client writes to shard %d's primary %s", s, rec.Primary)
		}
	}
	return ""
}

func nodeNamed(obs machine.Observation, name string) *machine.Node {
	for i := range obs.Nodes {
		if obs.Nodes[i].Name == name {
			return &obs.Nodes[i]
		}
	}
	return nil
}

// finalBackupWaits says what the deletion waits for, from the final backup's status, and how
// to go on without it when it failed.
func finalBackupWaits(vb *v1beta1.ValkeyBackup) string {
	const without = "to delete the cluster without it, remove spec.deletion.finalBackup"
	st := vb.Status
	switch st.Phase {
	case v1beta1.BackupRunning:
		return fmt.Sprintf("deleting: waits for the final backup %s (Running, attempt %d, to %s)", vb.Name, st.Attempts, st.Location)
	case v1beta1.BackupFailed:
		if st.NextAttemptAt != nil {
			return fmt.Sprintf("deleting: the final backup %s failed (attempt %d: %s); next attempt at %s: fix spec.backup.store (or the store's bucket or credentials) meanwhile, or %s", vb.Name, st.Attempts, st.Reason, st.NextAttemptAt.UTC().Format(time.RFC3339), without)
		}
		return fmt.Sprintf("deleting: the final backup %s failed and has no attempt left (attempt %d: %s): fix spec.backup.store (or the store's bucket or credentials) and delete ValkeyBackup %s to have it taken again, or %s", vb.Name, st.Attempts, st.Reason, vb.Name, without)
	case v1beta1.BackupPending:
		return fmt.Sprintf("deleting: waits for the final backup %s (Pending: %s)", vb.Name, st.Reason)
	}
	return fmt.Sprintf("deleting: waits for the final backup %s to start", vb.Name)
}
