package main

import (
	"fmt"
	"io"

	"github.com/valkey-fsm/valkey-operator/internal/version"
)

// isVersionFlag says whether the command line asks only for the version, which every
// subcommand's flag parser would otherwise refuse.
func isVersionFlag(arg string) bool {
	return arg == "--version" || arg == "-version" || arg == "version"
}

// printVersion is `valkey-operator --version`: "valkey-operator v0.3.0 (commit abc1234)".
func printVersion(w io.Writer) int {
	fmt.Fprintln(w, "valkey-operator", version.String())
	return 0
}
