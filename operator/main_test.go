package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestDispatch(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "simulate") {
		t.Fatalf("no subcommand: exit %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"frobnicate"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "unknown subcommand") {
		t.Fatalf("unknown subcommand: exit %d, %q", code, errOut.String())
	}
	out.Reset()
	if code := run([]string{"simulate", "-topology", "single", "-schedules", "3", "-steps", "30"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "simulated 3 schedules") {
		t.Fatalf("simulate: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}
