package sim

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// Main is the simulate command: `valkey-operator simulate [flags]`. It returns the exit
// code: 0 when no property failed, 1 on a violation, 2 on bad flags.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	topology := fs.String("topology", "all", "topology: "+strings.Join(TopologyNames(), ", ")+", or all (one after the other)")
	seed := fs.Int64("seed", 1, "seed of the first schedule (schedule i uses seed+i)")
	schedules := fs.Int("schedules", 1000, "number of random schedules to run")
	steps := fs.Int("steps", 100, "steps (ticks) per schedule before the faults stop")
	sabotage := fs.String("sabotage", "", "break one rule on purpose to see the checks catch it: "+sabotageNames())
	failures := fs.Int("failures", 1, "stop after this many failing schedules")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: valkey-operator simulate [flags]")
		fmt.Fprintln(stderr, "Runs random fault schedules against the state machine in a simulated world and checks the safety")
		fmt.Fprintln(stderr, "and liveness properties; on a violation prints the shrunk schedule and its history.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *schedules < 1 || *steps < 0 {
		fmt.Fprintln(stderr, "simulate: -schedules must be at least 1 and -steps not negative")
		return 2
	}
	var topos []Topology
	if *topology == "all" {
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
	rep := Explore(ChaosConfig{Topologies: topos, Seed: *seed, Schedules: *schedules, Steps: *steps, Sabotage: sab, MaxFailures: *failures})
	rep.Write(stdout)
	if !rep.OK() {
		return 1
	}
	return 0
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
