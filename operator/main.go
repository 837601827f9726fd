// Command valkey-operator is the Valkey operator binary. It only dispatches subcommands,
// each registered in subcommands and implemented in its own file (run.go: the operator). The
// simulator and the journal replay are the kubectl plugin's (kubectl valkey simulate, replay):
// the operator's image carries neither (deps_test.go).
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// subcommands maps a subcommand name to its entry point, which returns the exit code.
var subcommands = map[string]func(args []string, stdout, stderr io.Writer) int{}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if isVersionFlag(args[0]) {
		return printVersion(stdout)
	}
	cmd, ok := subcommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "valkey-operator: unknown subcommand %q\n", args[0])
		usage(stderr)
		return 2
	}
	return cmd(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	names := make([]string, 0, len(subcommands))
	for name := range subcommands {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: valkey-operator <subcommand> [flags] | --version")
	fmt.Fprintln(w, "subcommands:", strings.Join(names, ", "))
	fmt.Fprintln(w, "run a subcommand with -h for its flags")
}
