package sim

import (
	"strings"
	"testing"
	"time"
)

// An exploration reports the same whatever the number of workers: the same schedules, counts,
// edges, violations and shrunk failures, and a failure limit stops at the same schedule.
func TestExplorationSameForAnyParallelism(t *testing.T) {
	var topos []Topology
	for _, n := range TopologyNames() {
		topos = append(topos, Topologies[n])
	}
	for _, cfg := range []ChaosConfig{
		{Topologies: topos, Seed: 7, Schedules: 60, Steps: 100},
		// Failures found out of order by the workers: the report keeps the first two by seed.
		{Topologies: []Topology{Topologies["replication"]}, Seed: 1, Schedules: 120, Steps: 100, Sabotage: SabotagePromoteLowest, MaxFailures: 2, ShrinkRuns: 60},
	} {
		one, many := cfg, cfg
		one.Parallel, many.Parallel = 1, 5
		a, b := reportText(Explore(one)), reportText(Explore(many))
		if a != b {
			t.Errorf("1 worker reported:\n%s\n5 workers reported:\n%s", a, b)
		}
		if cfg.Sabotage != SabotageNone && !strings.Contains(a, "FAILED") {
			t.Errorf("the sabotaged exploration found nothing:\n%s", a)
		}
	}
}

// reportText is the report as simulate prints it, without what may differ between equal
// explorations: the time taken and the number of workers.
func reportText(r ChaosReport) string {
	r.Elapsed, r.Shrinking, r.Config.Parallel = 0, 0, 0
	var b strings.Builder
	r.Write(&b)
	return b.String()
}

// A time budget ends an exploration at a batch's end once spent and MinSchedules ran; what
// ran is the same as an exploration of that many schedules without one.
func TestExplorationBudgetStopsAtABatchEnd(t *testing.T) {
	cfg := ChaosConfig{Topologies: []Topology{Topologies["replication"], Topologies["cluster"]}, Seed: 3, Schedules: 10000, Steps: 60, Parallel: 2,
		Budget: time.Nanosecond, MinSchedules: 20}
	rep := Explore(cfg)
	// Batches of 8 per worker: 16 schedules, then 32, when the budget is found spent.
	if rep.Schedules != 32 {
		t.Fatalf("explored %d schedules, want 32 (two batches of 16)", rep.Schedules)
	}
	counted := cfg
	counted.Budget, counted.MinSchedules, counted.Schedules = 0, 0, rep.Schedules
	if a, b := reportText(rep), reportText(Explore(counted)); a != b {
		t.Errorf("budgeted:\n%s\ncounted:\n%s", a, b)
	}
}
