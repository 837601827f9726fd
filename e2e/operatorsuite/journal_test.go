package operatorsuite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestNewLeaderWithAnEmptyJournalBackfillsFromStatus: an operator that takes over with a
// journal that never saw the cluster (a new leader on another volume) copies what
// status.history still holds as backfilled records and journals new transitions after them.
func TestNewLeaderWithAnEmptyJournalBackfillsFromStatus(t *testing.T) {
	ns := cl.Namespace(t)
	first := startOperator(t, filepath.Join(t.TempDir(), "first.db"))
	ctx := ctxFor(t, 3*time.Minute)
	if err := k.Create(ctx, newCluster(ns, "jb", v1alpha1.TopologyReplication, 2)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "jb", 2*time.Minute, "Steady", steadyWith(2))
	first.stop(t)

	second := startOperator(t, filepath.Join(t.TempDir(), "second.db"))
	vc := get(t, ns, "jb")
	vc.Spec.Replicas = 3
	update(t, ctx, vc)
	vc = waitFor(t, ns, "jb", 2*time.Minute, "Steady with 3", steadyWith(3))
	records := journalRecords(t, second, ns, "jb")
	h := vc.Status.History
	if len(records) != len(h) {
		t.Fatalf("the new journal has %d records, status.history %d: %+v\n%s", len(records), len(h), records, summary(vc))
	}
	for i, r := range records {
		want := "backfilled"
		if i == len(records)-1 {
			want = "transition" // the scale-up, journaled by the new leader itself
		}
		if r.Kind != want || r.Entry.Seq != uint64(h[i].Seq) || r.Entry.Event != h[i].Event {
			t.Fatalf("record %d = %+v, want a %s record of %+v", i, r, want, h[i])
		}
	}
}
