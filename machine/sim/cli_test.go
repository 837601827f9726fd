package sim

import (
	"bytes"
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
	for _, want := range []string{"FAILED schedule", "reproduce: go run ./operator simulate -topology replication -seed", "shrunk to", "history of the shrunk run", "VIOLATION empty-sync-source"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSimulateCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-topology", "nope"}, {"-sabotage", "nope"}, {"-schedules", "0"}, {"-bogus"}} {
		var out, errOut bytes.Buffer
		if code := Main(args, &out, &errOut); code != 2 {
			t.Errorf("%v: want exit 2, got %d", args, code)
		}
	}
}
