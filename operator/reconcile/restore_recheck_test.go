package reconcile

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
)

// A backup refused for its content is not read again every refusedRecheck (the same object is
// refused again, and a large one is read whole each time): only once the cluster's spec
// changes. A refusal that says nothing of the content (the store did not answer) is checked
// again after refusedRecheck.
func TestARefusedBackupIsCheckedAgainOnlyWhenThatCanHelp(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	later := t0.Add(10 * refusedRecheck)
	const cluster = "uid-1"
	for _, tc := range []struct {
		name      string
		err       error
		gen       int64
		wantCheck bool
	}{
		{"content refused, same spec", fmt.Errorf("shard 0: %w: at byte 21: a string claims 1099511627776 bytes", backup.ErrCorrupt), 1, false},
		{"content refused, spec changed", fmt.Errorf("shard 0: %w: sha256", backup.ErrCorrupt), 2, true},
		{"store unreachable, same spec", errors.New("reading the manifest: connection refused"), 1, true},
	} {
		var c restoreChecks
		fresh := restoreCheck{id: "s3://b/c/crafted/", gen: 1}
		if _, start := c.want(cluster, fresh, t0); !start {
			t.Fatalf("%s: the first check did not start", tc.name)
		}
		done := fresh
		done.at, done.err = t0, tc.err
		if !c.finish(cluster, done) {
			t.Fatalf("%s: the check's outcome was not recorded", tc.name)
		}
		again := fresh
		again.gen = tc.gen
		if _, start := c.want(cluster, again, later); start != tc.wantCheck {
			t.Errorf("%s: checked again %v, want %v", tc.name, start, tc.wantCheck)
		}
	}
}
