package machine

import (
	"fmt"
	"strings"
	"testing"
)

// settledSentinels are n sentinels that answer, each monitoring the first primary (10.0.0.1)
// under epoch 0 and knowing the n-1 others and both replicas.
func settledSentinels(n int) []Sentinel {
	var out []Sentinel
	for i := range n {
		out = append(out, Sentinel{Name: fmt.Sprintf("sentinel-%d", i), IP: fmt.Sprintf("10.9.0.%d", i+1), ID: fmt.Sprintf("id-%d", i),
			Reachable: true, Monitoring: true, PrimaryIP: "10.0.0.1", Peers: n - 1, Settings: testSentinelSettings,
			Replicas: []SentinelReplica{{IP: "10.0.0.2", Priority: 100}, {IP: "10.0.0.3", Priority: 100}}})
	}
	return out
}

// sentinelScaleObs is a Steady Sentinel topology whose spec asks for want sentinels while the
// StatefulSet runs run, every sentinel settled.
func sentinelScaleObs(want, run int) Observation {
	spec := sentinelMonitorSpec()
	spec.Sentinels = want
	obs := obsAt(1, spec, primary(10), openReplica(1, 10), openReplica(2, 10))
	obs.Objects.Sentinels = run
	obs.Sentinels = settledSentinels(run)
	return obs
}

// sentinelsAsked is the sentinel count the decision's EnsureObjects asks for (-1: none).
func sentinelsAsked(d Decision) int {
	for _, a := range d.Actions {
		if e, ok := a.(EnsureObjects); ok {
			return e.Sentinels
		}
	}
	return -1
}

// The count moves one sentinel at a time towards the spec's, up or down, once every sentinel
// is settled.
func TestSentinelCountMovesOneAtATime(t *testing.T) {
	for _, c := range []struct{ want, run, asked int }{{5, 3, 4}, {5, 4, 5}, {3, 5, 4}, {3, 4, 3}, {9, 3, 4}} {
		d := Decide(steadyState(), sentinelScaleObs(c.want, c.run))
		if got := sentinelsAsked(d); got != c.asked {
			t.Errorf("spec %d, running %d: asked for %d sentinels, want %d (%v; waiting: %s)", c.want, c.run, got, c.asked, d.Actions, d.Waiting)
		}
	}
	// At the spec's count nothing changes.
	if d := Decide(steadyState(), sentinelScaleObs(3, 3)); sentinelsAsked(d) != -1 {
		t.Errorf("at the spec's count: %v", d.Actions)
	}
}

// A step waits, and status says why, while a sentinel is not settled: one does not answer,
// monitors nothing yet, knows one sentinel too few or too many, or a removed one's pod is still
// there. Outside Steady (a failover, a rollout) it waits too, and status gives that state's own
// reason.
func TestSentinelCountHoldsUntilTheSentinelsSettle(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Observation)
		why  string
	}{
		{"one does not answer", func(o *Observation) { o.Sentinels[1] = Sentinel{Name: "sentinel-1"} }, "sentinel-1 does not answer"},
		{"one monitors nothing", func(o *Observation) {
			o.Sentinels[3] = Sentinel{Name: "sentinel-3", IP: "10.9.0.4", ID: "id-3", Reachable: true}
		}, "sentinel-3 does not monitor the group yet"},
		{"one has not heard the newest", func(o *Observation) { o.Sentinels[0].Peers = 2 }, "sentinel-0 knows 2 other sentinels, not 3"},
		{"one still counts a removed one", func(o *Observation) { o.Sentinels[2].Peers = 4 }, "sentinel-2 knows 4 other sentinels, not 3"},
		{"a removed one's pod is still there", func(o *Observation) {
			o.Sentinels = append(o.Sentinels, Sentinel{Name: "sentinel-4", Reachable: true, Monitoring: true, PrimaryIP: "10.0.0.1", Peers: 3})
		}, "5 sentinel pods are seen, the StatefulSet asks for 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs := sentinelScaleObs(5, 4)
			c.edit(&obs)
			d := Decide(steadyState(), obs)
			if got := sentinelsAsked(d); got != -1 && got != 4 {
				t.Fatalf("asked for %d sentinels with %s (%v)", got, c.name, d.Actions)
			}
			if d.Waiting.Kind != WaitSentinelsScaling || !strings.Contains(d.Waiting.String(), c.why) {
				t.Fatalf("waiting %q, want the sentinel count held: %s", d.Waiting, c.why)
			}
		})
	}
	for _, c := range []struct {
		name  string
		edit  func(*Observation)
		state State
	}{
		{"a failover", func(o *Observation) { o.Sentinels[0].PrimaryDown = true }, FailingOver},
		{"a rollout", func(o *Observation) { o.Spec.Revision = "r2" }, Rolling},
	} {
		t.Run(c.name, func(t *testing.T) {
			obs := sentinelScaleObs(5, 4)
			c.edit(&obs)
			d := Decide(steadyState(), obs)
			if got := sentinelsAsked(d); got != -1 && got != 4 {
				t.Fatalf("asked for %d sentinels with %s", got, c.name)
			}
			if d.Next.State != c.state || d.Waiting.Kind == WaitSentinelsScaling {
				t.Fatalf("state %s, waiting %q: want %s with its own reason", d.Next.State, d.Waiting, c.state)
			}
		})
	}
}

// While the count moves, the sentinels the StatefulSet runs are the ones counted: at the start
// of a scale-up from three to nine a majority is two (the three that run elect a leader with
// two votes, and their pick must be recorded), and the quorum told is no more than run.
func TestSentinelsCountedAreThoseThatRun(t *testing.T) {
	obs := sentinelScaleObs(9, 3)
	d := decider{v: newView(obs), obs: obs}
	if got := d.sentinelMajority(); got != 2 {
		t.Errorf("majority of 3 running sentinels, 9 asked for: %d, want 2", got)
	}
	obs = sentinelScaleObs(5, 3)
	obs.Spec.SentinelSettings.Quorum = 5
	d = decider{v: newView(obs), obs: obs}
	if got := d.sentinelSettings().Quorum; got != 3 {
		t.Errorf("quorum told with 3 running and 5 asked: %d, want 3", got)
	}
}
