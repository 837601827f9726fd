package machine

import (
	"strings"
	"testing"
)

func observedOf(t *testing.T, p Persisted, obs Observation) map[string]Condition {
	t.Helper()
	d := Decide(p, obs)
	out := map[string]Condition{}
	for _, c := range Observed(d.Next, obs, d) {
		out[c.Type] = c
	}
	return out
}

func TestReadyIsComputedFromTheObservationNotTheState(t *testing.T) {
	spec := testSpec(2)
	c := observedOf(t, steadyState(), obsAt(1, spec, primary(10), replica(1, 10), replica(2, 10)))
	if c[ConditionReady].Status != ConditionTrue || c[ConditionProgressing].Status != ConditionFalse || c[ConditionDegraded].Status != ConditionFalse {
		t.Fatalf("a converged cluster: %+v", c)
	}
	// Steady, but the primary does not answer (fewer probes than the threshold): not Ready.
	c = observedOf(t, steadyState(), obsAt(2, spec, unreachable(primary(10), 1), replica(1, 10), replica(2, 10)))
	if r := c[ConditionReady]; r.Status != ConditionFalse || r.Reason != "PrimaryUnreachable" || !strings.Contains(r.Message, "s0-0") {
		t.Fatalf("Steady with an unreachable primary: %+v", r)
	}
	if d := c[ConditionDegraded]; d.Status != ConditionTrue || !strings.Contains(d.Message, "s0-0 not answering") {
		t.Fatalf("Degraded: %+v", d)
	}
	// A replica's pod does not run: Ready (the primary serves), Degraded says which.
	down := replica(2, 10)
	down.Pod.Running, down.Reachable = false, false
	c = observedOf(t, steadyState(), obsAt(3, spec, primary(10), replica(1, 10), down))
	if c[ConditionReady].Status != ConditionTrue || c[ConditionDegraded].Status != ConditionTrue || !strings.Contains(c[ConditionDegraded].Message, "s0-2 not running") {
		t.Fatalf("a replica down: %+v", c)
	}
}

func TestABlockedFailoverIsNotReadyAndSaysWhy(t *testing.T) {
	spec := testSpec(2)
	spec.MinSyncReplicas = 1
	// The primary is gone and both replicas are unseen: no quorum, the failover waits.
	p := steadyState()
	nodes := []Node{unreachable(primary(10), 5), unreachable(replica(1, 10), 5), unreachable(replica(2, 10), 5)}
	nodes[0].Pod.Running = false
	d := Decide(p, obsAt(5, spec, nodes...))
	c := map[string]Condition{}
	for _, x := range Observed(d.Next, obsAt(5, spec, nodes...), d) {
		c[x.Type] = x
	}
	if r := c[ConditionReady]; r.Status != ConditionFalse || r.Reason != "PrimaryLost" || !strings.Contains(r.Message, "unseen") {
		t.Fatalf("Ready does not say the failover waits for unseen nodes: %+v (decision %s)", r, d)
	}
	if pr := c[ConditionProgressing]; pr.Status != ConditionTrue {
		t.Fatalf("Progressing: %+v", pr)
	}
}

func TestObservedConditionsKeepTheirTimeUntilTheyFlip(t *testing.T) {
	conds := MergeObserved(nil, []Condition{{Type: ConditionReady, Status: ConditionTrue, Reason: "PrimaryServing"}}, at(1))
	conds = MergeObserved(conds, []Condition{{Type: ConditionReady, Status: ConditionTrue, Reason: "PrimaryServing", Message: "other"}}, at(2))
	if r, _ := findCondition(conds, ConditionReady); !r.LastTransitionTime.Equal(at(1)) || r.Message != "other" {
		t.Fatalf("unchanged status moved its time: %+v", r)
	}
	conds = MergeObserved(conds, []Condition{{Type: ConditionReady, Status: ConditionFalse, Reason: "PrimaryLost"}}, at(3))
	if r, _ := findCondition(conds, ConditionReady); !r.LastTransitionTime.Equal(at(3)) {
		t.Fatalf("a flip kept the old time: %+v", r)
	}
}
