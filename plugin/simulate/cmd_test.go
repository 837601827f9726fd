package simulate

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/exitcode"
)

// The verb is the simulator's command: its own flags, its report, its exit status.
func TestSimulateRunsTheSimulatorWithItsFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := NewCmd()
	cmd.SetArgs([]string{"-topology", "single", "-schedules", "3", "-steps", "30"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if err := cmd.Execute(); err != nil || !strings.Contains(out.String(), "simulated 3 schedules") {
		t.Fatalf("simulate: %v\n%s%s", err, out.String(), errOut.String())
	}

	out.Reset()
	errOut.Reset()
	cmd = NewCmd()
	cmd.SetArgs([]string{"-schedules", "0"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	var code exitcode.Code
	if err := cmd.Execute(); !errors.As(err, &code) || code != 2 || !strings.Contains(errOut.String(), "-schedules and -parallel must be at least 1") {
		t.Fatalf("simulate -schedules 0: %v, want exit status 2 with the simulator's message; stderr %q", err, errOut.String())
	}
}
