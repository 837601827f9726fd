package operatorsuite

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// TestAJournalThatCannotBeOpenedStopsNothing: the journal's path cannot be created (its
// parent is a file). The operator says so (an error in its log, the journal gauge at 0, a
// Warning Event on its own pod) and
// runs clusters anyway: the journal is a record, status is the machine's memory.
func TestAJournalThatCannotBeOpenedStopsNothing(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 3*time.Minute)
	// The operator's own pod, as the Downward API names it in the chart (this one never runs:
	// its node does not exist; the operator runs in the test process).
	self := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "valkey-operator-0"},
		Spec:       corev1.PodSpec{NodeName: "no-such-node", Containers: []corev1.Container{{Name: "operator", Image: "ghcr.io/valkey-fsm/valkey-operator:dev"}}},
	}
	if err := k.Create(ctx, self); err != nil {
		t.Fatal(err)
	}
	startOperator(t, "/proc/version/journal.db", func(c *manager.Config) { c.PodName, c.PodNamespace = self.Name, ns })
	if err := k.Create(ctx, newCluster(ns, "nj", v1alpha1.TopologyReplication, 2)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "nj", 2*time.Minute, "Steady without a journal", steadyWith(2))
	if len(vc.Status.History) == 0 {
		t.Fatal("no history in status")
	}
	if localcluster.SuiteLog(5, "[operator]", "the event journal cannot be opened") == "" {
		t.Fatal("the operator did not say that the journal cannot be opened")
	}
	// On the operator's own pod, where kubectl describe shows it.
	waitEvent(t, ctx, ns, "JournalUnavailable", "/proc/version/journal.db cannot be opened")
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		if f.GetName() == "valkey_operator_journal_available" {
			found = true
			if v := f.GetMetric()[0].GetGauge().GetValue(); v != 0 {
				t.Fatalf("valkey_operator_journal_available = %v without a journal, want 0", v)
			}
		}
	}
	if !found {
		t.Fatal("no valkey_operator_journal_available metric")
	}
}
