package backups

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
)

// TestRetentionKeepsTheNewestAndWhatARestoreNeeds runs retention against a real API server:
// of five completed scheduled backups with count 2, the two newest stay, and so do the one
// another cluster's restoreFrom names and the one whose directory a restore reads; the rest
// are deleted, as is a failed one older than the oldest kept; a backup taken on demand is
// never touched. With maxAge shorter than every backup's age, the newest still stays. (Found in
// review: retention could delete the backup a restore under way still had to load.)
func TestRetentionKeepsTheNewestAndWhatARestoreNeeds(t *testing.T) {
	c := apiClient(t)
	ctx := context.Background()
	ns := newNamespace(t, c, "retention-")
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s := &BackupScheduler{Base: Base{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(100), Metrics: shared.NewMetrics(prometheus.NewRegistry()), Stores: shared.Stores{Reader: c}, Now: func() time.Time { return now }}}
	cluster := func(name string, edit func(*v1beta1.ValkeyCluster)) *v1beta1.ValkeyCluster {
		vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name}}
		edit(vc)
		st := vc.Status
		if err := c.Create(ctx, vc); err != nil {
			t.Fatal(err)
		}
		if st.Restore != nil {
			vc.Status = st
			if err := c.Status().Update(ctx, vc); err != nil {
				t.Fatal(err)
			}
		}
		return vc
	}
	src := cluster("src", func(vc *v1beta1.ValkeyCluster) {
		vc.Spec.Backup = &v1beta1.BackupSpec{Store: v1beta1.BackupStore{Bucket: "backups", CredentialsSecretRef: &v1beta1.SecretRef{Name: "s3"}}, Retention: v1beta1.BackupRetention{Count: ptr.To[int32](2)}}
	})
	backup := func(name string, scheduled bool, phase v1beta1.BackupPhase, age time.Duration) {
		vb := &v1beta1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name, Labels: map[string]string{kube.LabelCluster: "src"}}, Spec: v1beta1.ValkeyBackupSpec{Cluster: "src"}}
		if scheduled {
			vb.Labels[LabelScheduled] = "true"
		}
		if err := c.Create(ctx, vb); err != nil {
			t.Fatal(err)
		}
		done := metav1.NewTime(now.Add(-age))
		vb.Status = v1beta1.ValkeyBackupStatus{Phase: phase, Path: ns.Name + "/src/" + name}
		if phase == v1beta1.BackupCompleted {
			vb.Status.CompletedAt = &done
		}
		if err := c.Status().Update(ctx, vb); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // creation times a second apart, oldest first
	}
	backup("failed-old", true, v1beta1.BackupFailed, 0)
	for i := 5; i >= 1; i-- {
		backup(fmt.Sprintf("s%d", i), true, v1beta1.BackupCompleted, time.Duration(i)*time.Hour)
	}
	backup("on-demand", false, v1beta1.BackupCompleted, 10*time.Hour)
	cluster("copy", func(vc *v1beta1.ValkeyCluster) { vc.Spec.RestoreFrom = &v1beta1.RestoreSource{Backup: "s5"} })
	cluster("restoring", func(vc *v1beta1.ValkeyCluster) {
		vc.Status.Restore = &v1beta1.RestoreStatus{ID: "x", HistoriesOf: "x", Path: ns.Name + "/src/s4"}
	})

	remaining := func() []string {
		var list v1beta1.ValkeyBackupList
		if err := c.List(ctx, &list, client.InNamespace(ns.Name)); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, b := range list.Items {
			names = append(names, b.Name)
		}
		sort.Strings(names)
		return names
	}
	scheduled := func() []v1beta1.ValkeyBackup {
		var list v1beta1.ValkeyBackupList
		if err := c.List(ctx, &list, client.InNamespace(ns.Name), client.MatchingLabels{LabelScheduled: "true"}); err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	if err := s.prune(ctx, src, scheduled()); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(remaining(), " "), "on-demand s1 s2 s4 s5"; got != want {
		t.Fatalf("after retention: %s, want %s", got, want)
	}

	// Every backup older than maxAge: the newest completed one stays all the same.
	src.Spec.Backup.Retention = v1beta1.BackupRetention{Count: ptr.To[int32](5), MaxAge: &metav1.Duration{Duration: 30 * time.Minute}}
	if err := s.prune(ctx, src, scheduled()); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(remaining(), " "), "on-demand s1 s4 s5"; got != want {
		t.Fatalf("after retention by age: %s, want %s", got, want)
	}
}
