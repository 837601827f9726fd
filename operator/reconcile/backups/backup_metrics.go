package backups

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// recordNewestBackup sets the newest-backup gauges of cluster (its time and size) from the
// ValkeyBackups that completed, whoever completed them: the status is the record, not this
// process's memory. An operator that starts reconciles every ValkeyBackup once, so right after
// a restart or a change of leader the gauges are there and ValkeyBackupTooOld judges the real
// newest backup, instead of staying silent (no series) until this process completes one. A
// cluster that no longer exists gets no gauges: its backups outlive it, its alerts do not.
func (b *BackupReconciler) recordNewestBackup(ctx context.Context, cluster types.NamespacedName) error {
	var vc v1beta1.ValkeyCluster
	if err := b.Client.Get(ctx, cluster, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	var list v1beta1.ValkeyBackupList
	if err := b.Client.List(ctx, &list, client.InNamespace(cluster.Namespace)); err != nil {
		return err
	}
	var newest *v1beta1.ValkeyBackup
	for i := range list.Items {
		vb := &list.Items[i]
		if vb.Spec.Cluster != cluster.Name || vb.Status.Phase != v1beta1.BackupCompleted || vb.Status.CompletedAt == nil {
			continue
		}
		if newest == nil || newest.Status.CompletedAt.Before(vb.Status.CompletedAt) {
			newest = vb
		}
	}
	if newest == nil {
		return nil
	}
	b.Metrics.BackupLastCompleted.WithLabelValues(cluster.Namespace, cluster.Name).Set(float64(newest.Status.CompletedAt.Unix()))
	b.Metrics.BackupLastSize.WithLabelValues(cluster.Namespace, cluster.Name).Set(float64(newest.Status.Size))
	return nil
}
