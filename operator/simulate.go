package main

import (
	"io"

	"github.com/valkey-fsm/valkey-operator/machine/sim"
)

// simulate is `valkey-operator simulate`: the chaos simulation by hand. The logic is in
// machine/sim so that tests and this command run the same code.
func simulate(args []string, stdout, stderr io.Writer) int {
	return sim.Main(args, stdout, stderr)
}
