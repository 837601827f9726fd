package main

import (
	"io"
	"os"

	"github.com/valkey-fsm/valkey-operator/machine/replay"
)

// replayJournal is `valkey-operator replay`: a recorded journal fed back through the machine
// (a determinism check, or a what-if with --set). The logic is in machine/replay so that tests
// and the plugin's history --replay run the same code.
func replayJournal(args []string, stdout, stderr io.Writer) int {
	return replay.Main(args, os.Stdin, stdout, stderr)
}
