package sim

import (
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The oracle must be able to fail: told that nodes fsync every write while they do not, the
// machine takes the primary restarted from its append-only file for complete, and so claims
// its data contains a replica's that holds writes the file lost. The oracle reports that
// claim; without the oracle the same schedules report no containment violation.
func TestOracleCatchesAFalseContainment(t *testing.T) {
	cfg := ChaosConfig{
		Topologies: []Topology{Topologies["replication-persistent"]}, Seed: 1, Schedules: 300, Steps: 100,
		Sabotage: SabotageTrustUnflushed, MaxFailures: 1, ShrinkRuns: 50,
	}
	rep := Explore(cfg)
	if rep.Violations[ViolationContainment] == 0 {
		t.Fatalf("the oracle did not report the sabotaged model's claims: %v", rep.Violations)
	}
	t.Logf("caught: %s", rep.Failures[0].Violation)
	cfg.NoOracle = true
	if off := Explore(cfg); off.Violations[ViolationContainment] != 0 {
		t.Fatalf("containment violations without the oracle: %v", off.Violations)
	}
}

// An honest run checks claims on every topology that elects among nodes holding data, and
// finds all of them true.
func TestOracleChecksClaimsOnEveryTopology(t *testing.T) {
	for _, name := range TopologyNames() {
		rep := Explore(ChaosConfig{Topologies: []Topology{Topologies[name]}, Seed: 1, Schedules: 60, Steps: 150})
		if !rep.OK() {
			t.Fatalf("%s: %v", name, rep.Violations)
		}
		t.Logf("%s: %d claims checked, %d estimates", name, rep.Totals.Claims, rep.Totals.Estimates)
		if rep.Totals.Claims+rep.Totals.Estimates == 0 {
			t.Errorf("%s: the model made no containment claim in %d schedules", name, rep.Schedules)
		}
	}
}

// The check itself, on a world whose data is known: a claim the data bears out passes, one it
// does not (a node said to hold a write it lacks, by node or by place in a history) fails.
func TestOracleCheckAgainstTheData(t *testing.T) {
	w, p, r, _ := bareWorld(t)
	wire(w, p, r)
	for key := 1; key <= 2; key++ {
		w.write(Write{Key: key})
		w.tick++
		w.pump()
	}
	w.write(Write{Key: 3}) // not replicated yet: the replica lacks it

	if len(p.log) != 3 || len(r.log) != 2 {
		t.Fatalf("setup: primary holds %d writes, replica %d", len(p.log), len(r.log))
	}
	h := p.replID
	cases := []struct {
		name  string
		claim machine.Containment
		fails bool
	}{
		{"primary holds replica", machine.Containment{Holder: p.runID, Of: r.runID}, false},
		{"replica holds primary", machine.Containment{Holder: r.runID, Of: p.runID}, true},
		{"replica holds the history to offset 2", machine.Containment{Holder: r.runID, ID: h, Through: 2}, false},
		{"replica holds the history to offset 3", machine.Containment{Holder: r.runID, ID: h, Through: 3}, true},
		{"an estimate is not checked", machine.Containment{Holder: r.runID, Of: p.runID, Estimate: true}, false},
	}
	for _, c := range cases {
		w.violations = nil
		w.checkContainments([]machine.Containment{c.claim})
		if got := len(w.violations) > 0; got != c.fails {
			t.Errorf("%s: violations %v, want failure %v", c.name, w.violations, c.fails)
		}
	}
}
