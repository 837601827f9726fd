package replay

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// setFlags collects repeated --set values.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ",") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// Main is the replay command: `kubectl valkey replay [flags] FILE` (FILE "-": standard
// input). It returns the exit code: 0 when a plain replay decided everything as recorded (or
// a what-if ran), 1 when a plain replay differs (a determinism failure), 2 on bad flags or a
// file that is not a journal. The logic is here so that tests and the command run the same
// code; the plugin's history --replay calls Read and Replay the same way.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sets setFlags
	fs.Var(&sets, "set", "a changed setting KEY=VALUE for a what-if replay (repeatable); the keys:\n"+Settings())
	every := fs.Bool("every-step", false, "print every decision, not runs of unchanged observations folded into one line")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kubectl valkey replay [--set KEY=VALUE]... [--every-step] FILE|-")
		fmt.Fprintln(stderr, "Feeds a recorded journal back through the state machine: every decision is taken again on the")
		fmt.Fprintln(stderr, "state the journal says was current and compared with the record (exit 1 when one differs).")
		fmt.Fprintln(stderr, "With --set the machine runs on its own decisions, the recorded observations as the world, and")
		fmt.Fprintln(stderr, "the report shows which decisions would have differed and when. FILE is what the journal API")
		fmt.Fprintln(stderr, "answers (kubectl get --raw '/apis/journal.valkey.fsm.dev/v1alpha1/namespaces/NS/journals/NAME?observations=true',")
		fmt.Fprintln(stderr, "pages appended one after the other) or kubectl valkey history NAME --full -o json.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	overrides, err := ParseOverrides(sets)
	if err != nil {
		fmt.Fprintln(stderr, "replay:", err)
		return 2
	}
	in := stdin
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(stderr, "replay:", err)
			return 2
		}
		defer f.Close()
		in = f
	}
	j, err := Read(in)
	if err != nil {
		fmt.Fprintf(stderr, "replay: %s: %v\n", fs.Arg(0), err)
		return 2
	}
	rep := Replay(j, overrides)
	if err := rep.Write(stdout, *every); err != nil {
		fmt.Fprintln(stderr, "replay:", err)
		return 2
	}
	if !rep.WhatIf() && rep.Differed > 0 {
		return 1
	}
	return 0
}
