package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// backupHubFields are the parts of a v1beta1 ValkeyBackup a v1alpha1 one has no field for.
type backupHubFields struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// SizeHuman is status.sizeHuman when it is not what the conversion derives from
	// status.size (SizeOf): restored only while the size is still SizeOf.
	SizeHuman *string `json:"sizeHuman,omitempty"`
	SizeOf    int64   `json:"sizeOf,omitempty"`
}

// ConvertTo converts this ValkeyBackup to the hub version, v1beta1.
func (src *ValkeyBackup) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*v1beta1.ValkeyBackup)
	if !ok {
		return fmt.Errorf("a v1alpha1 ValkeyBackup converts to a v1beta1 ValkeyBackup, not %T", dstRaw)
	}
	in := src.DeepCopy()
	dst.ObjectMeta = in.ObjectMeta
	dst.Spec = v1beta1.ValkeyBackupSpec(in.Spec)
	dst.Status = backupStatusToHub(in.Status)
	var kept backupHubFields
	found, err := takeHubFields(&dst.ObjectMeta, &kept)
	if err != nil || !found {
		return err
	}
	dst.Status.Conditions = kept.Conditions
	if kept.SizeHuman != nil && dst.Status.Size == kept.SizeOf {
		dst.Status.SizeHuman = *kept.SizeHuman
	}
	return nil
}

// ConvertFrom converts the hub version, v1beta1, to this ValkeyBackup.
func (dst *ValkeyBackup) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*v1beta1.ValkeyBackup)
	if !ok {
		return fmt.Errorf("a v1alpha1 ValkeyBackup converts from a v1beta1 ValkeyBackup, not %T", srcRaw)
	}
	in := src.DeepCopy()
	dst.ObjectMeta = in.ObjectMeta
	dst.Spec = ValkeyBackupSpec(in.Spec)
	dst.Status = backupStatusFromHub(in.Status)
	kept := backupHubFields{Conditions: in.Status.Conditions}
	if in.Status.SizeHuman != sizeHumanOf(in.Status.Size) {
		kept.SizeHuman, kept.SizeOf = &in.Status.SizeHuman, in.Status.Size
	}
	return keepHubFields(&dst.ObjectMeta, kept)
}

// sizeHumanOf is status.sizeHuman derived from status.size, so that backups a v1alpha1
// operator completed show their size in v1beta1's Size column too. No size (a backup not
// completed) shows nothing.
func sizeHumanOf(size int64) string {
	if size == 0 {
		return ""
	}
	return v1beta1.HumanSize(size)
}

// Backup modes are PascalCase in v1beta1, like the topologies they name; any other value is
// carried as it is.
var backupModeNames = map[string]v1beta1.BackupMode{
	"replication": v1beta1.BackupModeReplication,
	"cluster":     v1beta1.BackupModeCluster,
}

func backupModeToHub(m string) v1beta1.BackupMode {
	if to, ok := backupModeNames[m]; ok {
		return to
	}
	return v1beta1.BackupMode(m)
}

func backupModeFromHub(m v1beta1.BackupMode) string {
	for from, to := range backupModeNames {
		if to == m {
			return from
		}
	}
	return string(m)
}

func backupStatusToHub(in ValkeyBackupStatus) v1beta1.ValkeyBackupStatus {
	return v1beta1.ValkeyBackupStatus{
		Phase: v1beta1.BackupPhase(in.Phase), Reason: in.Reason, Attempts: in.Attempts,
		NextAttemptAt: in.NextAttemptAt, StartedAt: in.StartedAt, CompletedAt: in.CompletedAt,
		Location: in.Location, Store: storePtrToHub(in.Store), Path: in.Path,
		Mode: backupModeToHub(in.Mode), ValkeyVersion: in.ValkeyVersion,
		Size: in.Size, SizeHuman: sizeHumanOf(in.Size),
		Shards: convertSlice(in.Shards, func(s BackupShard) v1beta1.BackupShard { return v1beta1.BackupShard(s) }),
		Runner: in.Runner,
	}
}

func backupStatusFromHub(in v1beta1.ValkeyBackupStatus) ValkeyBackupStatus {
	return ValkeyBackupStatus{
		Phase: BackupPhase(in.Phase), Reason: in.Reason, Attempts: in.Attempts,
		NextAttemptAt: in.NextAttemptAt, StartedAt: in.StartedAt, CompletedAt: in.CompletedAt,
		Location: in.Location, Store: storePtrFromHub(in.Store), Path: in.Path,
		Mode: backupModeFromHub(in.Mode), ValkeyVersion: in.ValkeyVersion,
		Size:   in.Size,
		Shards: convertSlice(in.Shards, func(s v1beta1.BackupShard) BackupShard { return BackupShard(s) }),
		Runner: in.Runner,
	}
}
