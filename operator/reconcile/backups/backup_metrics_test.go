package backups

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
)

// TestAnOperatorThatStartsReadsTheNewestBackupFromTheValkeyBackups: ValkeyBackups completed
// before this process started (by an operator since restarted, or another leader) give the
// newest-backup gauges as soon as the starting operator reconciles them, whichever backup it
// reconciles first, so ValkeyBackupTooOld judges them at once. A failed backup, another
// cluster's, and the backups of a cluster that is gone do not count.
func TestAnOperatorThatStartsReadsTheNewestBackupFromTheValkeyBackups(t *testing.T) {
	c := apiClient(t)
	ctx := context.Background()
	ns := newNamespace(t, c, "backup-gauge-")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, name := range []string{"shop", "other"} {
		if err := c.Create(ctx, &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	backup := func(name, cluster string, phase v1beta1.BackupPhase, age time.Duration, size int64) {
		vb := &v1beta1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name}, Spec: v1beta1.ValkeyBackupSpec{Cluster: cluster}}
		if err := c.Create(ctx, vb); err != nil {
			t.Fatal(err)
		}
		vb.Status = v1beta1.ValkeyBackupStatus{Phase: phase, Size: size}
		if phase == v1beta1.BackupCompleted {
			done := metav1.NewTime(now.Add(-age))
			vb.Status.CompletedAt = &done
		}
		// Conditions already written, as a running operator leaves them (no backfill patch).
		setBackupReady(&vb.Status, vb.Generation, now)
		if err := c.Status().Update(ctx, vb); err != nil {
			t.Fatal(err)
		}
	}
	backup("old", "shop", v1beta1.BackupCompleted, 72*time.Hour, 100)
	backup("newest", "shop", v1beta1.BackupCompleted, 50*time.Hour, 200)
	backup("failed", "shop", v1beta1.BackupFailed, 0, 0)
	backup("theirs", "other", v1beta1.BackupCompleted, time.Hour, 300)
	backup("orphan", "gone", v1beta1.BackupCompleted, time.Hour, 400)

	// A fresh process: its own metrics, nothing completed by it.
	metrics := shared.NewMetrics(prometheus.NewRegistry())
	b := &BackupReconciler{Base: Base{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(100), Metrics: metrics, Stores: shared.Stores{Reader: c}, Now: func() time.Time { return now }},
		running: map[types.NamespacedName]string{}, base: make(chan context.Context, 1)}
	for _, name := range []string{"old", "failed", "orphan", "theirs"} {
		if _, err := b.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns.Name, Name: name}}); err != nil {
			t.Fatalf("reconcile %s: %v", name, err)
		}
	}
	if got, want := gaugeOf(t, metrics.BackupLastCompleted.WithLabelValues(ns.Name, "shop")), float64(now.Add(-50*time.Hour).Unix()); got != want {
		t.Errorf("shop's newest backup completed at %v, want %v (the newest ValkeyBackup's completedAt, though only an older one was reconciled)", got, want)
	}
	if got := gaugeOf(t, metrics.BackupLastSize.WithLabelValues(ns.Name, "shop")); got != 200 {
		t.Errorf("shop's newest backup size %v, want 200", got)
	}
	if got, want := gaugeOf(t, metrics.BackupLastCompleted.WithLabelValues(ns.Name, "other")), float64(now.Add(-time.Hour).Unix()); got != want {
		t.Errorf("other's newest backup completed at %v, want %v", got, want)
	}
	if n := seriesOf(metrics.BackupLastCompleted); n != 2 {
		t.Errorf("%d newest-backup series, want 2 (shop, other; none for the cluster that is gone)", n)
	}
}

func gaugeOf(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func seriesOf(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric, 64)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	n := 0
	for range ch {
		n++
	}
	return n
}
