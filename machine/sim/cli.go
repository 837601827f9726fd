package sim

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/valkey-fsm/valkey-operator/machine/replay"
)

// Main is the simulate command: `kubectl valkey simulate [flags]`. It returns the exit
// code: 0 when no property failed, 1 on a violation, 2 on bad flags.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	topology := fs.String("topology", "all", "topology: "+strings.Join(knownTopologyNames(), ", ")+", or all (one after the other: "+strings.Join(TopologyNames(), ", ")+")")
	seed := fs.Int64("seed", 1, "seed of the first schedule (schedule i uses seed+i)")
	schedules := fs.Int("schedules", 1000, "number of random schedules to run")
	steps := fs.Int("steps", 100, "steps (ticks) per schedule before the faults stop")
	sabotage := fs.String("sabotage", "", "break one rule on purpose to see the checks catch it: "+sabotageNames())
	failures := fs.Int("failures", 1, "stop after this many failing schedules")
	replay := fs.String("schedule", "", "replay one schedule file (one step per line, as a failure report prints it) with its history, instead of exploring")
	fromJournal := fs.String("from-journal", "", "start from a recorded cluster's last state: the shape, settings and primary of the journal's last observation and state (an exported journal, as kubectl valkey replay reads it; - for standard input); replaces -topology")
	parallel := fs.Int("parallel", runtime.GOMAXPROCS(0), "schedules run at once (the report is the same for any number)")
	budget := fs.Duration("budget", 0, "explore for this long (at a batch's end), up to -schedules if given: a fixed time rather than a fixed count")
	everyEdge := fs.Bool("every-edge", false, "fail (exit 1) when a transition table edge was never taken")
	oracle := fs.Bool("oracle", true, "check every containment claim of the election model against the simulated nodes' data (off: to measure what the check costs)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the exploration to this file (go tool pprof reads it)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kubectl valkey simulate [flags]")
		fmt.Fprintln(stderr, "Runs random fault schedules against the state machine in a simulated world and checks the safety")
		fmt.Fprintln(stderr, "and liveness properties; on a violation prints the shrunk schedule and its history.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *schedules < 1 || *steps < 0 || *parallel < 1 {
		fmt.Fprintln(stderr, "simulate: -schedules and -parallel must be at least 1 and -steps not negative")
		return 2
	}
	var topos []Topology
	if *fromJournal != "" {
		t, desc, err := topologyFromJournalFile(*fromJournal)
		if err != nil {
			fmt.Fprintln(stderr, "simulate:", err)
			return 2
		}
		fmt.Fprintln(stdout, desc)
		topos = []Topology{t}
		*topology = t.Name
	} else if *topology == "all" {
		for _, n := range TopologyNames() {
			topos = append(topos, Topologies[n])
		}
	} else {
		t, err := LookupTopology(*topology)
		if err != nil {
			fmt.Fprintln(stderr, "simulate:", err)
			return 2
		}
		topos = []Topology{t}
	}
	sab := Sabotage(*sabotage)
	if sab != SabotageNone && !knownSabotage(sab) {
		fmt.Fprintf(stderr, "simulate: unknown sabotage %q (known: %s)\n", sab, sabotageNames())
		return 2
	}
	if *replay != "" {
		return replaySchedule(*replay, *topology, topos, sab, stdout, stderr)
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "simulate:", err)
			return 2
		}
		defer stop()
	}
	if *budget > 0 && !flagSet(fs, "schedules") {
		*schedules = math.MaxInt32
	}
	rep := Explore(ChaosConfig{Topologies: topos, Seed: *seed, Schedules: *schedules, Steps: *steps, Sabotage: sab, MaxFailures: *failures, Parallel: *parallel, Budget: *budget, NoOracle: !*oracle})
	rep.Write(stdout)
	if !rep.OK() {
		return 1
	}
	if *everyEdge {
		return checkEveryEdge(rep, stdout)
	}
	return 0
}

// checkEveryEdge is -every-edge: every table edge was taken, by the exploration or by a
// pinned edge schedule that pins it (PinnedEdges), and no pinned schedule failed.
func checkEveryEdge(rep ChaosReport, stdout io.Writer) int {
	taken, problems := PinnedEdges()
	var pinned, never []string
	for _, e := range rep.Unexercised() {
		if file, ok := taken[e]; ok {
			pinned = append(pinned, fmt.Sprintf("%s (%s)", e, path.Base(file)))
		} else {
			never = append(never, e)
		}
	}
	if len(pinned) > 0 {
		fmt.Fprintf(stdout, "table edges taken only by the pinned edge schedules: %s\n", strings.Join(pinned, "; "))
	}
	code := 0
	if len(problems) > 0 {
		fmt.Fprintf(stdout, "FAILED: pinned edge schedules: %s\n", strings.Join(problems, "; "))
		code = 1
	}
	if len(never) > 0 {
		fmt.Fprintf(stdout, "FAILED: %d table edge(s) never taken: %s\n", len(never), strings.Join(never, "; "))
		code = 1
	}
	return code
}

// startCPUProfile profiles the process into path until the returned function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// replaySchedule plays a schedule file (its "# topology:" line, else -topology) and prints
// the history and the violations.
func replaySchedule(path, topology string, topos []Topology, sab Sabotage, stdout, stderr io.Writer) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(stderr, "simulate:", err)
		return 2
	}
	defer f.Close()
	name, steps, err := ReadSchedule(f)
	if err != nil {
		fmt.Fprintf(stderr, "simulate: %s: %v\n", path, err)
		return 2
	}
	if name == "" {
		name = topology
	}
	t, err := LookupTopology(name)
	if len(topos) == 1 && topos[0].Name == name {
		t, err = topos[0], nil // a journal's
	}
	if err != nil {
		fmt.Fprintln(stderr, "simulate:", err)
		return 2
	}
	res := Run(t, steps, Options{Sabotage: sab, Trace: true})
	fmt.Fprintf(stdout, "replayed %s: %d steps on %s\n", path, len(steps), t.Name)
	for _, line := range res.Trace {
		fmt.Fprintln(stdout, "  "+line)
	}
	if len(res.Violations) == 0 {
		fmt.Fprintln(stdout, "invariant violations: none")
		return 0
	}
	for _, v := range res.Violations {
		fmt.Fprintln(stdout, "VIOLATION", v)
	}
	return 1
}

// topologyFromJournalFile reads an exported journal and builds the topology to continue it.
func topologyFromJournalFile(path string) (Topology, string, error) {
	in := io.Reader(os.Stdin)
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return Topology{}, "", err
		}
		defer f.Close()
		in = f
	}
	j, err := replay.Read(in)
	if err != nil {
		return Topology{}, "", fmt.Errorf("%s: %w", path, err)
	}
	return FromJournal(j)
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func knownSabotage(s Sabotage) bool {
	for _, k := range Sabotages {
		if k == s {
			return true
		}
	}
	return false
}

func sabotageNames() string {
	names := make([]string, len(Sabotages))
	for i, s := range Sabotages {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
