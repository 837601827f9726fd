package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"hash"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// explorationDigest was recorded from the simulator before it was made faster. Speeding up
// the world, the checks or the machine must not change what a schedule does: the same
// seeds must give the same histories, statistics and violations, line for line. When a
// change is meant to change the simulation (a refined world, a new rule), record the new
// digest the failure prints and say in the commit why the runs changed.
const explorationDigest = "8d911102b2dd4dd0f8138396a9bda48462671d321f9a8a46f248f637bab5554d"

// TestExplorationDigest runs a fixed-seed exploration over every topology with its history
// traced, the same schedules without a trace, sabotaged schedules and one shrunk failure, and
// compares a digest of all of it with the one recorded.
func TestExplorationDigest(t *testing.T) {
	h := sha256.New()
	digestExploration(h)
	if got := hex.EncodeToString(h.Sum(nil)); got != explorationDigest {
		t.Fatalf("the fixed-seed exploration changed: digest %s, recorded %s", got, explorationDigest)
	}
}

// regressionDigests holds, per regression schedule, the digest of its traced run, recorded
// before the simulator was made faster (a schedule added since has none and is skipped here;
// -sim.record-digests rewrites the file).
const regressionDigests = "testdata/regression-digests.txt"

// TestRegressionScheduleDigests replays every regression schedule with its history and
// compares each run's digest with the one recorded.
func TestRegressionScheduleDigests(t *testing.T) {
	files, err := filepath.Glob("testdata/regressions/*.sched")
	if err != nil || len(files) == 0 {
		t.Fatalf("no regression schedules (%v)", err)
	}
	got := map[string]string{}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		writeResult(h, runSchedule(t, f))
		f.Close()
		got[filepath.Base(file)] = hex.EncodeToString(h.Sum(nil))
	}
	if *recordDigests {
		var b strings.Builder
		for _, file := range files {
			fmt.Fprintf(&b, "%s %s\n", filepath.Base(file), got[filepath.Base(file)])
		}
		if err := os.WriteFile(regressionDigests, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	text, err := os.ReadFile(regressionDigests)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		name, want, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: bad line %q", regressionDigests, line)
		}
		if got[name] == "" {
			t.Errorf("%s: recorded but gone", name)
		} else if got[name] != want {
			t.Errorf("%s: the run changed: digest %s, recorded %s", name, got[name], want)
		}
	}
}

var recordDigests = flag.Bool("sim.record-digests", false, "rewrite "+regressionDigests+" from today's runs")

// digestExploration writes everything the runs produce, in a fixed order, to h.
func digestExploration(h hash.Hash) {
	names := TopologyNames()
	const honest, honestSteps = 100, 200
	for i := 0; i < honest; i++ {
		topo := Topologies[names[i%len(names)]]
		seed := int64(1 + i)
		schedule := Generate(RandSource{rand.New(rand.NewSource(seed))}, topo, honestSteps)
		fmt.Fprintf(h, "schedule %s seed %d\n", topo.Name, seed)
		writeSchedule(h, schedule)
		writeResult(h, Run(topo, schedule, Options{Trace: true}))
		writeResult(h, Run(topo, schedule, Options{}))
	}
	// Sabotaged schedules reach the checks' failure paths.
	for si, sab := range Sabotages {
		for j := 0; j < 4; j++ {
			topo := Topologies[names[(si+j)%len(names)]]
			seed := int64(1000 + 10*si + j)
			schedule := Generate(RandSource{rand.New(rand.NewSource(seed))}, topo, 100)
			fmt.Fprintf(h, "sabotage %s %s seed %d\n", sab, topo.Name, seed)
			writeResult(h, Run(topo, schedule, Options{Sabotage: sab, Trace: true}))
		}
	}
	// One failure found and shrunk, as simulate reports it.
	rep := Explore(ChaosConfig{Topologies: []Topology{Topologies["replication"]}, Seed: 1, Schedules: 300, Steps: 100, Sabotage: SabotagePromoteLowest, ShrinkRuns: 150})
	writeReport(h, rep)
}

func writeSchedule(w io.Writer, schedule []Step) {
	for _, st := range schedule {
		fmt.Fprintln(w, st)
	}
}

func writeResult(w io.Writer, r Result) {
	for _, v := range r.Violations {
		fmt.Fprintln(w, "violation", v)
	}
	writeStats(w, r.Stats)
	fmt.Fprintln(w, "converged in", r.ConvergeTicks)
	for _, line := range r.Trace {
		fmt.Fprintln(w, line)
	}
}

func writeStats(w io.Writer, s Stats) {
	fmt.Fprintf(w, "ticks %d writes %d rejected %d waited %d transitions %d actions %d refused %d reconciles %d\n",
		s.Ticks, s.Writes, s.WritesRejected, s.WaitAcked, s.Transitions, s.Actions, s.ActionsRefused, s.Reconciles)
	for _, k := range FaultKinds {
		fmt.Fprintf(w, "fault %s %d\n", k, s.Faults[k])
	}
	edges := make([]string, 0, len(s.Edges))
	for e := range s.Edges {
		edges = append(edges, e)
	}
	sort.Strings(edges)
	for _, e := range edges {
		fmt.Fprintf(w, "edge %s %d\n", e, s.Edges[e])
	}
}

func writeReport(w io.Writer, r ChaosReport) {
	fmt.Fprintf(w, "report %d schedules %d ticks\n", r.Schedules, r.Ticks)
	writeStats(w, Stats{Faults: r.Faults, Edges: r.Totals.Edges, Writes: r.Totals.Writes, WritesRejected: r.Totals.WritesRejected,
		WaitAcked: r.Totals.WaitAcked, Transitions: r.Totals.Transitions, Actions: r.Totals.Actions, ActionsRefused: r.Totals.ActionsRefused, Reconciles: r.Totals.Reconciles})
	kinds := make([]string, 0, len(r.Violations))
	for k, n := range r.Violations {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	fmt.Fprintln(w, kinds)
	for _, f := range r.Failures {
		fmt.Fprintf(w, "failure %s seed %d steps %d: %s\n", f.Topology, f.Seed, f.Steps, f.Violation)
		writeSchedule(w, f.Shrunk)
		for _, line := range f.Trace {
			fmt.Fprintln(w, line)
		}
	}
}
