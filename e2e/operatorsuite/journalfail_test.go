package operatorsuite

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
)

// TestAJournalThatCannotBeOpenedStopsNothing: the journal's path cannot be created (its
// parent is a file). The operator says so (an error in its log, the journal gauge at 0) and
// runs clusters anyway: the journal is a record, status is the machine's memory.
func TestAJournalThatCannotBeOpenedStopsNothing(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "/proc/version/journal.db")
	ctx := ctxFor(t, 3*time.Minute)
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
