package sim

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimulateCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main([]string{"-topology", "replication", "-seed", "1", "-schedules", "20", "-steps", "60"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"simulated 20 schedules of 60 steps on replication (seed 1)", "faults injected:", "kill-primary=", "invariant violations: none"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSimulateCommandFailsOnAViolation(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main([]string{"-topology", "replication", "-schedules", "50", "-sabotage", "no-start-fence"}, &out, &errOut)
	if code != 1 {
		t.Fatalf("want exit 1 on a violation, got %d\n%s", code, out.String())
	}
	for _, want := range []string{"FAILED schedule", "reproduce: go run ./plugin simulate -topology replication -seed", "shrunk to", "history of the shrunk run", "VIOLATION empty-sync-source"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// With -every-edge, a run too short to take every table edge fails and names them.
func TestSimulateCommandFailsOnAnEdgeNeverTaken(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main([]string{"-topology", "single", "-schedules", "3", "-steps", "30", "-every-edge"}, &out, &errOut)
	if code != 1 || !strings.Contains(out.String(), "table edge(s) never taken: ") || !strings.Contains(out.String(), "Resharding --reshard-complete--> Steady") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	// The edges the pinned schedules take count as taken, and are named as theirs.
	_, never, _ := strings.Cut(out.String(), "never taken: ")
	if strings.Contains(never, "Resharding --deposed-resynced--> Resharding") ||
		!strings.Contains(out.String(), "taken only by the pinned edge schedules: ") ||
		!strings.Contains(out.String(), "Resharding --deposed-resynced--> Resharding (resharding-scaled-up-behind-brings-back-a-deposed-claim.sched)") {
		t.Fatalf("pinned edges not counted:\n%s", out.String())
	}
}

func TestSimulateCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-topology", "nope"}, {"-sabotage", "nope"}, {"-schedules", "0"}, {"-parallel", "0"}, {"-bogus"}} {
		var out, errOut bytes.Buffer
		if code := Main(args, &out, &errOut); code != 2 {
			t.Errorf("%v: want exit 2, got %d", args, code)
		}
	}
}

func TestSimulateCommandReplaysAScheduleFile(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main([]string{"-schedule", "testdata/regressions/all-copies-lost-reseeds.sched"}, &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "DATA LOST") || !strings.Contains(out.String(), "invariant violations: none") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	// Without the start-up fence, the primary's replicas re-sync from it after it restarts
	// empty: the replay reports the violation and exits 1.
	sched := filepath.Join(t.TempDir(), "kill.sched")
	text := "# topology: replication\n" + strings.Repeat("operator\n", 9) + "write+WAIT key 1 (from ordinal 0)\nidle\nfault: kill-primary primary-of-s0\nidle\nidle\n"
	if err := os.WriteFile(sched, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	code = Main([]string{"-schedule", sched, "-sabotage", "no-start-fence"}, &out, &errOut)
	if code != 1 || !strings.Contains(out.String(), "VIOLATION t=") || !strings.Contains(out.String(), "empty-sync-source") {
		t.Fatalf("sabotaged replay: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code = Main([]string{"-schedule", sched}, &out, &errOut); code != 0 {
		t.Fatalf("the same schedule without sabotage: exit %d\n%s", code, out.String())
	}
}
