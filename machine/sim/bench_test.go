package sim

import (
	"math/rand"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

var sinkDecision machine.Decision

// referenceDecide times a bare machine.Decide on a converged replication cluster as
// observed by the simulator: the reference a simulated step is compared with.
func referenceDecide(n int) time.Duration {
	s := New(Topologies["replication"], Options{})
	for i := 0; i < 12; i++ {
		s.Step(Step{Kind: StepOperator})
	}
	obs := s.w.observe(map[string]int{})
	p := s.State()
	start := time.Now()
	for i := 0; i < n; i++ {
		sinkDecision = machine.Decide(p, obs)
	}
	return time.Since(start)
}

// BenchmarkSimStep measures simulated steps (ticks) per second over random schedules on
// every topology, everything included (world, operator, the machine's and the world's
// checks), against a bare Decide measured in the same run.
func BenchmarkSimStep(b *testing.B) {
	const schedules = 40
	var ticks int64
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		for j := 0; j < schedules; j++ {
			t := Topologies[TopologyNames()[j%len(Topologies)]]
			sched := Generate(RandSource{rand.New(rand.NewSource(int64(j)))}, t, 100)
			ticks += Run(t, sched, Options{}).Stats.Ticks
		}
		elapsed += time.Since(start)
	}
	const refN = 20000
	ref := float64(referenceDecide(refN).Nanoseconds()) / refN
	stepNs := float64(elapsed.Nanoseconds()) / float64(ticks)
	b.ReportMetric(stepNs, "ns/op")
	b.ReportMetric(stepNs, "ns/step")
	b.ReportMetric(1e9/stepNs, "steps/s")
	b.ReportMetric(ref, "ns/decide(ref)")
	b.ReportMetric(stepNs/ref, "step/decide")
}

// BenchmarkCIExploration runs 2000 of the schedules the default `go test` explores
// (TestChaosExploration, which runs for a time budget) and reports how many steps that is,
// how long it takes, and how many schedules a minute of CI explores at that speed.
func BenchmarkCIExploration(b *testing.B) {
	cfg := ciExploration()
	cfg.Schedules, cfg.Budget = 2000, 0 // a count: the figure is its time
	var elapsed time.Duration
	var ticks int64
	for i := 0; i < b.N; i++ {
		rep := Explore(cfg)
		if !rep.OK() {
			b.Fatalf("violations: %v", rep.Violations)
		}
		elapsed += rep.Elapsed
		ticks += rep.Ticks
	}
	secs := elapsed.Seconds() / float64(b.N)
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(cfg.Schedules), "schedules")
	b.ReportMetric(float64(ticks)/float64(b.N), "steps")
	b.ReportMetric(secs, "s/run")
	b.ReportMetric(float64(cfg.Schedules)/secs*60, "schedules/min")
}

// BenchmarkExplore measures what simulate explores: schedules and simulated steps (ticks) per
// second of 200-step schedules, per topology and over all of them (simulate's default), on one
// core and on every core, both in each iteration so that their ratio comes from the same run.
// The goal is 1000 schedules/s over all topologies on every core.
func BenchmarkExplore(b *testing.B) {
	// As the simulate command runs (operator/simulate.go).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	cases := append([]string{"all"}, TopologyNames()...)
	for _, name := range cases {
		topos := []Topology{Topologies[name]}
		if name == "all" {
			topos = nil
			for _, n := range TopologyNames() {
				topos = append(topos, Topologies[n])
			}
		}
		b.Run("topology="+name, func(b *testing.B) {
			const schedules, steps = 100, 200
			cores := runtime.GOMAXPROCS(0)
			var one, all time.Duration
			var ticks int64
			for i := 0; i < b.N; i++ {
				cfg := ChaosConfig{Topologies: topos, Seed: int64(1 + i*schedules), Schedules: schedules, Steps: steps, Parallel: 1}
				r := Explore(cfg)
				one += r.Elapsed
				cfg.Parallel = cores
				rAll := Explore(cfg)
				all += rAll.Elapsed
				if !r.OK() || !rAll.OK() || r.Ticks != rAll.Ticks {
					b.Fatalf("violations %v / %v, ticks %d / %d", r.Violations, rAll.Violations, r.Ticks, rAll.Ticks)
				}
				ticks += r.Ticks
			}
			n := float64(b.N * schedules)
			b.ReportMetric(float64(all.Nanoseconds())/n, "ns/op")
			b.ReportMetric(n/one.Seconds(), "schedules/s(1core)")
			b.ReportMetric(float64(ticks)/one.Seconds(), "ticks/s(1core)")
			b.ReportMetric(n/all.Seconds(), "schedules/s(all)")
			b.ReportMetric(float64(ticks)/all.Seconds(), "ticks/s(all)")
			b.ReportMetric(float64(cores), "cores")
			b.ReportMetric(one.Seconds()/all.Seconds(), "all/1core")
		})
	}
}
