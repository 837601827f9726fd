package main

import (
	"io"
	"os"
	"runtime/debug"

	"github.com/valkey-fsm/valkey-operator/machine/sim"
)

// simulate is `valkey-operator simulate`: the chaos simulation by hand. The logic is in
// machine/sim so that tests and this command run the same code.
//
// A simulation's live heap is small and it allocates fast, so Go's default GOGC (100) collects
// every few milliseconds: a fifth of its CPU in a profile. Unless GOGC says otherwise, the
// command lets the heap grow four times its live size between collections (tens of MB).
func simulate(args []string, stdout, stderr io.Writer) int {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	return sim.Main(args, stdout, stderr)
}
