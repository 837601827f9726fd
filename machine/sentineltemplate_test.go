package machine

import (
	"strings"
	"testing"
)

// sentinelRollObs is a Steady Sentinel topology whose sentinels' template is at revision s2 in
// the spec and the StatefulSet, with the sentinels' pods at revs (one per sentinel), every
// sentinel settled.
func sentinelRollObs(revs ...string) Observation {
	spec := sentinelMonitorSpec()
	spec.SentinelRevision = "s2"
	obs := obsAt(1, spec, primary(10), openReplica(1, 10), openReplica(2, 10))
	obs.Objects.SentinelRevision = "s2"
	obs.Sentinels = settledSentinels(len(revs))
	for i, r := range revs {
		obs.Sentinels[i].Revision, obs.Sentinels[i].PodReady = r, true
	}
	return obs
}

// rolled names the sentinels the decision restarts.
func rolled(d Decision) []string {
	var out []string
	for _, a := range d.Actions {
		if r, ok := a.(RollSentinel); ok {
			out = append(out, r.Sentinel)
		}
	}
	return out
}

// A changed template reaches the sentinels one at a time: the first one on the old revision is
// restarted, with the id it answered with, and only when every sentinel is settled.
func TestSentinelsRollOneAtATime(t *testing.T) {
	d := Decide(steadyState(), sentinelRollObs("s2", "s1", "s1"))
	got := rolled(d)
	if len(got) != 1 || got[0] != "sentinel-1" {
		t.Fatalf("restarted %v, want sentinel-1 alone (%v; waiting: %s)", got, d.Actions, d.Waiting)
	}
	for _, a := range d.Actions {
		if r, ok := a.(RollSentinel); ok && (r.ID != "id-1" || r.IP != "10.9.0.2" || r.Revision != "s2") {
			t.Fatalf("roll %+v: want sentinel-1's id and address, to s2", r)
		}
	}
	if d.Next.State != Steady {
		t.Fatalf("state %s: restarting a sentinel is Steady's work", d.Next.State)
	}
	// Every pod at the revision: nothing to do.
	if d := Decide(steadyState(), sentinelRollObs("s2", "s2", "s2")); len(rolled(d)) > 0 || d.Waiting.Kind == WaitSentinelsRolling {
		t.Fatalf("all at s2: restarted %v, waiting %s", rolled(d), d.Waiting)
	}
}

// The StatefulSet is given the template first: a sentinel restarted before would come back on
// the old one.
func TestSentinelsRollOnlyOnceTheStatefulSetHasTheTemplate(t *testing.T) {
	obs := sentinelRollObs("s1", "s1", "s1")
	obs.Objects.SentinelRevision = "s1"
	d := Decide(steadyState(), obs)
	if len(rolled(d)) > 0 {
		t.Fatalf("restarted %v before the StatefulSet asks for s2", rolled(d))
	}
	asked := actionsOf(d, "ensure-objects")
	if len(asked) != 1 || !strings.Contains(asked[0], "sentinel-revision=s2") {
		t.Fatalf("ensure-objects %v: want the sentinels' template at s2", asked)
	}
}

// A step waits, and status says why, while any sentinel is not settled: the one restarted last
// has not come back or not been heard by the others, another is being deleted, a failover is
// under way. A stale sentinel that does not answer is restarted once it is the only one not
// settled (its old template may be what stops it); never a second one beside it.
func TestSentinelsRollHoldsUntilTheOthersSettle(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Observation)
		why  string
	}{
		{"the last one restarted does not answer yet", func(o *Observation) {
			o.Sentinels[0] = Sentinel{Name: "sentinel-0", Revision: "s2"}
		}, "sentinel-0 does not answer"},
		{"the last one restarted has no pod yet", func(o *Observation) {
			o.Sentinels[0] = Sentinel{Name: "sentinel-0"}
		}, "sentinel-0 does not answer"},
		{"the last one restarted is not heard by the others yet", func(o *Observation) { o.Sentinels[2].Peers = 1 }, "sentinel-2 knows 1 other sentinels, not 2"},
		{"a pod is being deleted", func(o *Observation) { o.Sentinels[0].Terminating = true }, "sentinel-0's pod is being deleted"},
		{"the last one restarted answers before its pod is ready", func(o *Observation) { o.Sentinels[0].PodReady = false }, "sentinel-0's pod is not ready yet"},
		{"a stale one does not answer beside another", func(o *Observation) {
			o.Sentinels[1].Reachable = false
			o.Sentinels[2].Reachable = false
		}, "no majority (2) names one primary"},
		{"the sentinels scale first", func(o *Observation) { o.Spec.Sentinels = 5 }, "the sentinels go from 3 to 5 first"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs := sentinelRollObs("s2", "s1", "s1")
			c.edit(&obs)
			d := Decide(steadyState(), obs)
			if got := rolled(d); len(got) > 0 {
				t.Fatalf("restarted %v with %s", got, c.name)
			}
			if !strings.Contains(d.String(), c.why) {
				t.Fatalf("waiting %q, want the sentinels' restart held: %s", d.String(), c.why)
			}
		})
	}
	t.Run("a failover", func(t *testing.T) {
		obs := sentinelRollObs("s2", "s1", "s1")
		obs.Sentinels[0].PrimaryDown = true
		d := Decide(steadyState(), obs)
		if len(rolled(d)) > 0 {
			t.Fatalf("restarted %v while a sentinel finds the primary down", rolled(d))
		}
	})
	t.Run("a stale one alone does not answer", func(t *testing.T) {
		obs := sentinelRollObs("s2", "s1", "s1")
		obs.Sentinels[2] = Sentinel{Name: "sentinel-2", IP: "10.9.0.3", Revision: "s1"}
		d := Decide(steadyState(), obs)
		if got := rolled(d); len(got) != 1 || got[0] != "sentinel-2" {
			t.Fatalf("restarted %v, want sentinel-2, the one that does not answer (waiting: %s)", got, d.String())
		}
	})
}
