package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/internal/version"
)

func TestDispatch(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "subcommands: run") {
		t.Fatalf("no subcommand: exit %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"frobnicate"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "unknown subcommand") {
		t.Fatalf("unknown subcommand: exit %d, %q", code, errOut.String())
	}
	// The simulator is the plugin's (kubectl valkey simulate): the operator does not know it.
	errOut.Reset()
	if code := run([]string{"simulate"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `unknown subcommand "simulate"`) {
		t.Fatalf("simulate: exit %d, %q", code, errOut.String())
	}
}

// TestVersionPrintsTheStampedVersion builds the binary as make does (-ldflags -X) and runs it:
// the version a user reads is the one the build was given, not the default.
func TestVersionPrintsTheStampedVersion(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "valkey-operator")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", version.LDFlags("v9.8.7-test", "abc1234"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "valkey-operator v9.8.7-test (commit abc1234)"; got != want {
		t.Fatalf("--version printed %q, want %q", got, want)
	}
}
