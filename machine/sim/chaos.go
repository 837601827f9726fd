package sim

import (
	"fmt"
	"io"
	"math/rand"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// ChaosConfig is one exploration: Schedules random schedules of Steps steps each, the i-th
// drawn from seed Seed+i on topology Topologies[i % len(Topologies)].
type ChaosConfig struct {
	Topologies []Topology
	Seed       int64
	Schedules  int
	Steps      int
	Sabotage   Sabotage
	// MaxFailures stops the exploration after that many failing schedules (default 1).
	MaxFailures int
	// ShrinkRuns bounds the simulation runs spent shrinking one failure (default 2000).
	ShrinkRuns int
	// Parallel is how many schedules run at once (default: GOMAXPROCS); the report is the
	// same for any value.
	Parallel int
	// Budget, when set, ends the exploration once that much time was spent exploring (and at
	// least MinSchedules ran), at a batch's end, before Schedules: CI explores as many
	// schedules as a fixed time allows. Which schedules run is the same as without a budget;
	// how many depends on the machine.
	Budget       time.Duration
	MinSchedules int
	// NoOracle turns the check of the election model's claims off (Options.NoOracle).
	NoOracle bool
}

// ChaosReport is what an exploration found.
type ChaosReport struct {
	Config    ChaosConfig
	Schedules int
	Ticks     int64
	// Elapsed is the time spent exploring; Shrinking the time spent shrinking failures.
	Elapsed    time.Duration
	Shrinking  time.Duration
	Faults     map[FaultKind]int
	Violations map[ViolationKind]int
	Totals     Stats
	// DeposedWaitSchedules counts the schedules in which a failover waited for a person to
	// give up a deposed pod's keys (Stats.DeposedWaits): a wait that fires often is too broad.
	DeposedWaitSchedules int
	Failures             []Failure
}

// Failure is one failing schedule, shrunk, with the readable history of the shrunk run.
type Failure struct {
	Topology  string
	Seed      int64
	Steps     int
	Violation Violation
	Shrunk    []Step
	Trace     []string
}

// Explore runs the schedules of cfg, shrinks the first failures and reports. Schedules are
// independent: cfg.Parallel workers run them, and the report takes their results in schedule
// order, so that it is the same whatever the number of workers (a failure limit stops at the
// same schedule; the schedules run beyond it are dropped).
func Explore(cfg ChaosConfig) ChaosReport {
	if cfg.MaxFailures == 0 {
		cfg.MaxFailures = 1
	}
	if cfg.ShrinkRuns == 0 {
		cfg.ShrinkRuns = 2000
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = runtime.GOMAXPROCS(0)
	}
	rep := ChaosReport{Config: cfg, Faults: map[FaultKind]int{}, Violations: map[ViolationKind]int{}}
	rep.Totals.Edges = map[string]int{}
	start := time.Now()
	opts := Options{Sabotage: cfg.Sabotage, NoOracle: cfg.NoOracle}
	// A batch is a few schedules per worker: enough to keep them busy, few enough that little
	// is run past a failure limit.
	batch := cfg.Parallel * 8
	results := make([]explored, batch)
	for first := 0; first < cfg.Schedules; first += batch {
		if cfg.Budget > 0 && first >= cfg.MinSchedules && time.Since(start)-rep.Shrinking >= cfg.Budget {
			break
		}
		n := min(batch, cfg.Schedules-first)
		exploreBatch(cfg, opts, first, results[:n])
		for _, x := range results[:n] {
			if rep.take(cfg, opts, x) {
				rep.Elapsed = time.Since(start) - rep.Shrinking
				return rep
			}
		}
	}
	rep.Elapsed = time.Since(start) - rep.Shrinking
	return rep
}

// explored is one schedule of an exploration and its result.
type explored struct {
	topo     Topology
	seed     int64
	schedule []Step
	res      Result
}

// exploreBatch runs schedules first, first+1, ... into out with cfg.Parallel workers.
func exploreBatch(cfg ChaosConfig, opts Options, first int, out []explored) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(cfg.Parallel, len(out)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= len(out) {
					return
				}
				i := first + j
				t := cfg.Topologies[i%len(cfg.Topologies)]
				seed := cfg.Seed + int64(i)
				schedule := Generate(RandSource{rand.New(rand.NewSource(seed))}, t, cfg.Steps)
				out[j] = explored{topo: t, seed: seed, schedule: schedule, res: Run(t, schedule, opts)}
			}
		}()
	}
	wg.Wait()
}

// take adds one schedule's result to the report, shrinking it when it failed; it reports
// whether the failure limit is reached.
func (r *ChaosReport) take(cfg ChaosConfig, opts Options, x explored) bool {
	t, res := x.topo, x.res
	r.Schedules++
	r.add(res.Stats)
	for _, v := range res.Violations {
		r.Violations[v.Kind]++
	}
	if len(res.Violations) == 0 {
		return false
	}
	first := res.Violations[0]
	fails := func(r Result) bool {
		for _, v := range r.Violations {
			if v.Kind == first.Kind {
				return true
			}
		}
		return false
	}
	shrinkStart := time.Now()
	shrunk := Shrink(t, x.schedule, opts, fails, cfg.ShrinkRuns)
	traced := Run(t, shrunk, Options{Sabotage: cfg.Sabotage, NoOracle: cfg.NoOracle, Trace: true})
	r.Shrinking += time.Since(shrinkStart)
	v := first
	for _, tv := range traced.Violations {
		if tv.Kind == first.Kind {
			v = tv
			break
		}
	}
	r.Failures = append(r.Failures, Failure{Topology: t.Name, Seed: x.seed, Steps: len(x.schedule), Violation: v, Shrunk: shrunk, Trace: traced.Trace})
	return len(r.Failures) >= cfg.MaxFailures
}

func (r *ChaosReport) add(s Stats) {
	r.Ticks += s.Ticks
	for k, n := range s.Faults {
		r.Faults[k] += n
	}
	r.Totals.Writes += s.Writes
	r.Totals.WritesRejected += s.WritesRejected
	r.Totals.WaitAcked += s.WaitAcked
	r.Totals.Transitions += s.Transitions
	for e, n := range s.Edges {
		r.Totals.Edges[e] += n
	}
	r.Totals.Actions += s.Actions
	r.Totals.ActionsRefused += s.ActionsRefused
	r.Totals.Reconciles += s.Reconciles
	r.Totals.Claims += s.Claims
	r.Totals.Estimates += s.Estimates
	r.Totals.DeposedWaits += s.DeposedWaits
	r.Totals.DeposedGivenUp += s.DeposedGivenUp
	r.Totals.SentinelLostWrites += s.SentinelLostWrites
	r.Totals.SentinelOverlapTicks += s.SentinelOverlapTicks
	if s.DeposedWaits > 0 {
		r.DeposedWaitSchedules++
	}
}

// Unexercised lists the table's edges no schedule took.
func (r ChaosReport) Unexercised() []string {
	var out []string
	for _, e := range machine.Table() {
		if name := edgeName(e.From, e.Event, e.To); r.Totals.Edges[name] == 0 {
			out = append(out, name)
		}
	}
	return out
}

// OK reports whether no property failed.
func (r ChaosReport) OK() bool { return len(r.Violations) == 0 }

// Write prints the summary and, for each failure, the shrunk schedule and its history.
func (r ChaosReport) Write(out io.Writer) {
	names := make([]string, len(r.Config.Topologies))
	for i, t := range r.Config.Topologies {
		names[i] = t.Name
	}
	secs := r.Elapsed.Seconds()
	if secs == 0 {
		secs = 1e-9
	}
	fmt.Fprintf(out, "simulated %d schedules of %d steps on %s (seed %d", r.Schedules, r.Config.Steps, strings.Join(names, ","), r.Config.Seed)
	if r.Config.Sabotage != SabotageNone {
		fmt.Fprintf(out, ", sabotage %s", r.Config.Sabotage)
	}
	fmt.Fprint(out, ") in ", r.Elapsed.Round(time.Millisecond))
	if r.Config.Parallel > 0 {
		fmt.Fprintf(out, " (%d at once)", r.Config.Parallel)
	}
	fmt.Fprintf(out, ": %d ticks, %.0f ticks/s, %.0f schedules/s\n", r.Ticks, float64(r.Ticks)/secs, float64(r.Schedules)/secs)
	t := r.Totals
	fmt.Fprintf(out, "reconciles %d, transitions %d, actions %d (%d refused or failed), client writes %d acknowledged (%d by WAIT), %d rejected\n",
		t.Reconciles, t.Transitions, t.Actions, t.ActionsRefused, t.Writes, t.WaitAcked, t.WritesRejected)
	fmt.Fprintf(out, "election model: %d containment claims checked against the world's data, %d key-count estimates not checked\n", t.Claims, t.Estimates)
	fmt.Fprintf(out, "deposed pods that may hold the line: failovers waited for a person in %d schedules (%d decisions); the user gave up %d pods' keys\n", r.DeposedWaitSchedules, t.DeposedWaits, t.DeposedGivenUp)
	if t.SentinelLostWrites > 0 || t.SentinelOverlapTicks > 0 {
		fmt.Fprintf(out, "Sentinel's own losses (by its rules, not violations): %d WAIT-acknowledged writes a replica it promoted lacked or a primary it replaced took, %d ticks of two primaries\n", t.SentinelLostWrites, t.SentinelOverlapTicks)
	}
	unexercised := r.Unexercised()
	edges := machine.Table()
	fmt.Fprintf(out, "table edges exercised: %d of %d", len(edges)-len(unexercised), len(edges))
	if len(unexercised) > 0 {
		fmt.Fprintf(out, " (not: %s)", strings.Join(unexercised, "; "))
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "faults injected:")
	for _, k := range FaultKinds {
		fmt.Fprintf(out, " %s=%d", k, r.Faults[k])
	}
	fmt.Fprintln(out)
	if r.OK() {
		fmt.Fprintln(out, "invariant violations: none")
		return
	}
	kinds := make([]string, 0, len(r.Violations))
	for k, n := range r.Violations {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	fmt.Fprintf(out, "invariant violations: %s (shrinking took %s)\n", strings.Join(kinds, " "), r.Shrinking.Round(time.Millisecond))
	for _, f := range r.Failures {
		fmt.Fprintf(out, "\nFAILED schedule (topology %s, seed %d, %d steps): %s\n", f.Topology, f.Seed, f.Steps, f.Violation)
		sab := ""
		if r.Config.Sabotage != SabotageNone {
			sab = " -sabotage " + string(r.Config.Sabotage)
		}
		fmt.Fprintf(out, "reproduce: go run ./plugin simulate -topology %s -seed %d -schedules 1 -steps %d%s\n", f.Topology, f.Seed, f.Steps, sab)
		fmt.Fprintf(out, "shrunk to %d steps (save them with a \"# topology: %s\" line as a .sched file to replay with -schedule):\n", len(f.Shrunk), f.Topology)
		for i, st := range f.Shrunk {
			fmt.Fprintf(out, "  %3d  %s\n", i, st)
		}
		fmt.Fprintln(out, "history of the shrunk run (the faults stop after the last step, then the operator converges):")
		for _, line := range f.Trace {
			fmt.Fprintf(out, "  %s\n", line)
		}
	}
}
