package machine

import (
	"testing"
	"time"

	"github.com/looplab/fsm"
)

// benchCases are representative decisions: a converged cluster (the common case), the
// election of a failover, and a rolling step.
func benchCases() []struct {
	p   Persisted
	obs Observation
} {
	spec := testSpec(2)
	converged := obsAt(5, spec, primary(9), replica(1, 9), replica(2, 9))
	lost := obsAt(5, spec, unreachable(primary(9), 5), detached(replica(1, 7)), detached(replica(2, 9)))
	failing := steadyState()
	failing.State, failing.Op = FailingOver, Operation{Election: Election{Lost: "s0-0", LostRunID: "run-0", LostHistory: History{ID: "h1"}, Writer: "s0-0"}}
	rolling := steadyState()
	rolling.State, rolling.Op = Rolling, Operation{Roll: Roll{Revision: "r2"}}
	spec2 := spec
	spec2.Revision = "r2"
	return []struct {
		p   Persisted
		obs Observation
	}{
		{steadyState(), converged},
		{failing, lost},
		{rolling, obsAt(5, spec2, primary(9), replica(1, 9), replica(2, 9))},
	}
}

var (
	sinkDecision Decision
	sinkFSM      *fsm.FSM
)

// BenchmarkDecide measures decisions per second, and as the reference measured in the same
// run the cost of building a looplab FSM over the table (what every transition once paid;
// transitions now take a built one from a pool). Each iteration times a fixed batch, so that
// -benchtime 1x still gives stable figures.
func BenchmarkDecide(b *testing.B) {
	cases := benchCases()
	const batch = 20000
	var decide, build time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		for j := 0; j < batch; j++ {
			c := cases[j%len(cases)]
			sinkDecision = Decide(c.p, c.obs)
		}
		decide += time.Since(start)
		start = time.Now()
		for j := 0; j < batch; j++ {
			sinkFSM = newFSM(Steady)
		}
		build += time.Since(start)
	}
	n := float64(b.N * batch)
	decideNs := float64(decide.Nanoseconds()) / n
	buildNs := float64(build.Nanoseconds()) / n
	b.ReportMetric(decideNs, "ns/op")
	b.ReportMetric(decideNs, "ns/decide")
	b.ReportMetric(1e9/decideNs, "decides/s")
	b.ReportMetric(buildNs, "ns/fsm-build(ref)")
	b.ReportMetric(decideNs/buildNs, "decide/fsm-build")
}
