package sim

import (
	"math/rand"
	"strings"
	"testing"
)

func TestSmoke(t *testing.T) {
	for _, name := range TopologyNames() {
		topo := Topologies[name]
		res := Run(topo, nil, Options{Trace: true})
		t.Logf("%s: converge %d ticks, violations %v, stats %+v", name, res.ConvergeTicks, res.Violations, res.Stats)
		if len(res.Violations) > 0 {
			t.Log(strings.Join(res.Trace, "\n"))
			t.Fatal("violations")
		}
	}
}

func TestSmokeRandom(t *testing.T) {
	counts := map[ViolationKind]int{}
	for _, name := range TopologyNames() {
		topo := Topologies[name]
		for i := 0; i < 300; i++ {
			sched := Generate(RandSource{rand.New(rand.NewSource(int64(i)))}, topo, 100)
			res := Run(topo, sched, Options{})
			for _, v := range res.Violations {
				counts[v.Kind]++
			}
			if len(res.Violations) > 0 && counts[res.Violations[0].Kind] == 1 {
				t.Logf("%s seed %d: %v", name, i, res.Violations[0])
			}
		}
	}
	t.Log(counts)
}
