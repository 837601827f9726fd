package backups

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// A ValkeyBackup's Ready condition says what its phase says, in the shape kubectl wait
// --for=condition=Ready and other tools read: True once the backup completed, False with the
// phase as the reason and the status's reason as the message otherwise. It is derived from the
// phase every time that is written, never decided apart from it. The transition time is now
// only when the status changes: meta.SetStatusCondition keeps the previous time otherwise.

// setBackupReady fills a backup status's derived fields: sizeHuman from size (empty until the
// backup completed: a running backup's size is not known yet) and the Ready condition.
func setBackupReady(st *v1beta1.ValkeyBackupStatus, generation int64, now time.Time) {
	st.SizeHuman = ""
	if st.Phase == v1beta1.BackupCompleted {
		st.SizeHuman = v1beta1.HumanSize(st.Size)
	}
	ready := metav1.Condition{Type: v1beta1.ConditionBackupReady, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now)}
	switch st.Phase {
	case v1beta1.BackupCompleted:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, string(v1beta1.BackupCompleted), "the backup is complete and verified"
	case "":
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, string(v1beta1.BackupPending), "the operator has not started the backup"
	default:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, string(st.Phase), st.Reason
	}
	meta.SetStatusCondition(&st.Conditions, ready)
}
