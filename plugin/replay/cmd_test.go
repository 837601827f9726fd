package replay

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/exitcode"
)

// The verb is the replay's command: its usage names the plugin, a file it cannot read exits 2.
func TestReplayRunsTheMachinesReplay(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := NewCmd()
	cmd.SetArgs([]string{"/nonexistent/journal.json"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	var code exitcode.Code
	if err := cmd.Execute(); !errors.As(err, &code) || code != 2 || !strings.Contains(errOut.String(), "replay:") {
		t.Fatalf("replay of a missing file: %v, stderr %q", err, errOut.String())
	}

	errOut.Reset()
	cmd = NewCmd()
	cmd.SetArgs([]string{"-h"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if err := cmd.Execute(); !strings.Contains(errOut.String(), "usage: kubectl valkey replay") {
		t.Fatalf("replay -h: %v, stderr %q", err, errOut.String())
	}
}
