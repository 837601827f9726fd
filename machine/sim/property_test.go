package sim

import (
	"flag"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// rapidSource lets rapid draw the schedule, so that it can shrink a failure to the shortest
// and simplest sequence of steps.
type rapidSource struct{ t *rapid.T }

func (s rapidSource) Intn(n int, label string) int { return rapid.IntRange(0, n-1).Draw(s.t, label) }

// harness is one simulated cluster driven by rapid, with the steps played so far so that a
// failure can be replayed with a readable history.
type harness struct {
	topo  Topology
	opts  Options
	sim   *Sim
	steps []Step
}

func newHarness(t Topology, opts Options) *harness {
	return &harness{topo: t, opts: opts, sim: New(t, opts)}
}

func (h *harness) step(st Step) {
	h.steps = append(h.steps, st)
	h.sim.Step(st)
}

// check fails the rapid test when any property failed, with the violations and the history
// of the same steps replayed with tracing on.
func (h *harness) check(t *rapid.T, converged bool) {
	vs := h.sim.Violations()
	if len(vs) == 0 {
		return
	}
	opts := h.opts
	opts.Trace = true
	replay := New(h.topo, opts)
	for _, st := range h.steps {
		replay.Step(st)
	}
	if converged {
		replay.Converge()
	}
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %s\n", v)
	}
	t.Fatalf("property failed on topology %s after %d steps:\n%shistory:\n  %s", h.topo.Name, len(h.steps), b.String(), strings.Join(replay.Trace(), "\n  "))
}

// actions are the rapid state-machine actions: each plays one or a few steps of a schedule.
func (h *harness) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"operator": func(t *rapid.T) {
			for n := rapid.IntRange(1, 4).Draw(t, "reconciles"); n > 0; n-- {
				h.step(Step{Kind: StepOperator})
			}
		},
		"write": func(t *rapid.T) { h.step(Step{Kind: StepWrite, Write: GenWrite(rapidSource{t}, h.topo)}) },
		"fault": func(t *rapid.T) { h.step(Step{Kind: StepFault, Fault: GenFault(rapidSource{t}, h.topo)}) },
		"user":  func(t *rapid.T) { h.step(Step{Kind: StepUser, User: GenUser(rapidSource{t}, h.topo)}) },
		"idle":  func(t *rapid.T) { h.step(Step{Kind: StepIdle}) },
		"":      func(t *rapid.T) { h.check(t, false) },
	}
}

// scheduleProperty is the property every schedule must have, checked after every step
// (invariant) and after the faults stop:
//   - the machine: every transition taken is in the table and starts in the persisted state;
//     exactly one state condition is True; the journal folds to the live state and the live
//     history; re-delivering an observation adds no transition and asks for the same
//     actions; a machine rebuilt from the stored state decides the same;
//   - safety in the world: never two nodes of a shard accepting writes; never a promotion of
//     a node behind another the operator saw; never a node restarted without its data
//     feeding a replica that held data; no WAIT-acknowledged write lost; history bounded and
//     gap-free;
//   - liveness: once faults stop and actuators succeed, Steady is reached within the bound
//     and holds.
func scheduleProperty(t Topology, opts Options) func(*rapid.T) {
	return func(rt *rapid.T) {
		h := newHarness(t, opts)
		rt.Repeat(h.actions())
		h.sim.Converge()
		h.check(rt, true)
	}
}

func TestProperties(t *testing.T) {
	for _, name := range TopologyNames() {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, scheduleProperty(Topologies[name], Options{}))
		})
	}
}

var (
	chaosLong   = flag.Bool("chaos.long", false, "explore 20000 schedules of 200 steps instead of the default time budget")
	chaosBudget = flag.Duration("chaos.budget", 20*time.Second, "time the seeded exploration runs for (at least 200 schedules)")
)

// ciExploration is what `go test` explores besides the rapid properties: seeded schedules,
// the same generator as `kubectl valkey simulate`, for a fixed time rather than a fixed count
// (a faster simulator explores more).
func ciExploration() ChaosConfig {
	var topos []Topology
	for _, n := range TopologyNames() {
		topos = append(topos, Topologies[n])
	}
	cfg := ChaosConfig{Topologies: topos, Seed: 1, Schedules: math.MaxInt32, Steps: 200, Budget: *chaosBudget, MinSchedules: 200}
	if *chaosLong {
		cfg.Schedules, cfg.Budget = 20000, 0
	}
	if testing.Short() {
		cfg.Schedules, cfg.Budget = 200, 0
	}
	return cfg
}

func TestChaosExploration(t *testing.T) {
	rep := Explore(ciExploration())
	var out strings.Builder
	rep.Write(&out)
	t.Log("\n" + out.String())
	if !rep.OK() {
		t.Fatal("a schedule violated a property (see the shrunk history above)")
	}
	// Scaling is explored, including a scale-down that moves the primary first.
	for _, e := range []string{
		edgeName(machine.Steady, machine.EventReplicasChanged, machine.Steady),
		edgeName(machine.Steady, machine.EventScaleDownHandOver, machine.FailingOver),
	} {
		if rep.Totals.Edges[e] == 0 {
			t.Errorf("%s never taken", e)
		}
	}
}
