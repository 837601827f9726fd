package backups

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// A backup's Ready condition and sizeHuman follow its phase and size.
func TestBackupReadyFollowsThePhase(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	st := v1beta1.ValkeyBackupStatus{Phase: v1beta1.BackupRunning}
	setBackupReady(&st, 1, t0)
	c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionBackupReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Running" || st.SizeHuman != "" {
		t.Fatalf("running: %+v, sizeHuman %q", c, st.SizeHuman)
	}
	st.Phase, st.Reason = v1beta1.BackupFailed, "the store refused the upload"
	setBackupReady(&st, 1, t0.Add(time.Minute))
	c = meta.FindStatusCondition(st.Conditions, v1beta1.ConditionBackupReady)
	if c.Status != metav1.ConditionFalse || c.Reason != "Failed" || c.Message != "the store refused the upload" || !c.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("failed: %+v (the status did not change: the transition time stays)", c)
	}
	st.Phase, st.Reason, st.Size = v1beta1.BackupCompleted, "", 1536<<20
	setBackupReady(&st, 1, t0.Add(2*time.Minute))
	c = meta.FindStatusCondition(st.Conditions, v1beta1.ConditionBackupReady)
	if c.Status != metav1.ConditionTrue || c.Reason != "Completed" || !c.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) || st.SizeHuman != "1.5 GiB" {
		t.Fatalf("completed: %+v, sizeHuman %q", c, st.SizeHuman)
	}
}
