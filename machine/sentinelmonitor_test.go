package machine

import (
	"strings"
	"testing"
)

var testSentinelSettings = SentinelSettings{Quorum: 2, DownAfterMillis: 5000, FailoverTimeoutMillis: 30000, ParallelSyncs: 1}

// monitoredSentinels are three sentinels that answer, monitoring the first primary (10.0.0.1)
// under epoch with the test settings; those listed in unmonitored monitor nothing.
func monitoredSentinels(epoch uint64, unmonitored ...int) []Sentinel {
	out := sentinels(0, "", 0)
	for i := range out {
		out[i].ConfigEpoch, out[i].Settings = epoch, testSentinelSettings
		out[i].IP, out[i].ID = "10.9.0."+string(rune('1'+i)), "id-"+out[i].Name
	}
	for _, i := range unmonitored {
		out[i] = Sentinel{Name: out[i].Name, IP: out[i].IP, ID: out[i].ID, Reachable: true}
	}
	return out
}

func monitorsOf(d Decision) []SentinelMonitor {
	var out []SentinelMonitor
	for _, a := range d.Actions {
		if m, ok := a.(SentinelMonitor); ok {
			out = append(out, m)
		}
	}
	return out
}

func sentinelMonitorSpec() Spec {
	s := sentinelSpec()
	s.SentinelSettings = testSentinelSettings
	return s
}

// After the bootstrap no sentinel monitors the group, and the recorded epoch is 0: every one is
// told the recorded primary at once, with the spec's settings, aimed at the sentinel's id.
func TestSentinelsAreToldTheRecordedPrimaryAfterTheBootstrap(t *testing.T) {
	spec := sentinelMonitorSpec()
	obs := obsAt(1, spec, primary(0), replica(1, 100), replica(2, 100))
	obs.Sentinels = monitoredSentinels(0, 0, 1, 2)
	d := Decide(steadyState(), obs)
	got := monitorsOf(d)
	if len(got) != 3 {
		t.Fatalf("want every sentinel told, got %v", d.Actions)
	}
	for i, m := range got {
		s := obs.Sentinels[i]
		if m.Sentinel != s.Name || m.ID != s.ID || m.IP != s.IP || m.Primary != "s0-0" || m.PrimaryIP != "10.0.0.1" || m.Settings != testSentinelSettings {
			t.Errorf("told %+v, want %s (%s, %s) at s0-0 (10.0.0.1) with %+v", m, s.Name, s.ID, s.IP, testSentinelSettings)
		}
	}
	// Until a majority monitors it, the replicas are left alone and the primary is not opened.
	for _, kind := range []string{"replica-of", "open-writes", "fence"} {
		if a := actionsOf(d, kind); len(a) > 0 {
			t.Errorf("%v before the sentinels monitor the primary", a)
		}
	}
}

// Under a recorded epoch above 0 a sentinel told the group starts under epoch 0, and takes
// the recorded one from the others' hellos: one is told at a time, and none while one told
// before is still behind, so that sentinels just told never make a majority naming the
// recorded primary under another epoch than the record's (which reads as a failover).
func TestSentinelsAreToldOneAtATimeAfterAFailover(t *testing.T) {
	spec := sentinelMonitorSpec()
	p := steadyState()
	p.Shards[0].ClaimEpoch = 3

	obs := obsAt(1, spec, primary(0), replica(1, 100), replica(2, 100))
	obs.Sentinels = monitoredSentinels(3, 1, 2)
	d := Decide(p, obs)
	if got := monitorsOf(d); len(got) != 1 || got[0].Sentinel != "sentinel-1" {
		t.Fatalf("want sentinel-1 told alone, got %v", d.Actions)
	}
	if d.Transition != nil {
		t.Fatalf("unexpected transition %s", d.Transition.Event)
	}

	obs.Sentinels[1] = monitoredSentinels(0)[1] // told, still under epoch 0
	d = Decide(p, obs)
	if got := monitorsOf(d); len(got) != 0 || d.Transition != nil {
		t.Fatalf("a sentinel still behind: want nothing told, got %v (%v)", d.Actions, d.Transition)
	}

	obs.Sentinels[1].ConfigEpoch = 3 // caught up
	d = Decide(p, obs)
	if got := monitorsOf(d); len(got) != 1 || got[0].Sentinel != "sentinel-2" {
		t.Fatalf("want sentinel-2 told next, got %v", d.Actions)
	}
}

// Nothing is told while a sentinel reports a failover, names another primary or a newer epoch,
// or while the recorded primary does not answer as a primary.
func TestSentinelsAreNotToldWhileTheGroupMoves(t *testing.T) {
	spec := sentinelMonitorSpec()
	cases := map[string]func(o *Observation){
		"a sentinel leads a failover": func(o *Observation) { o.Sentinels[0].FailingOver = true },
		"a sentinel finds it down":    func(o *Observation) { o.Sentinels[0].PrimaryDown = true },
		"a sentinel names another":    func(o *Observation) { o.Sentinels[0].PrimaryIP = "10.0.0.2" },
		"a newer epoch":               func(o *Observation) { o.Sentinels[0].ConfigEpoch = 1 },
		"the primary does not answer": func(o *Observation) { o.Nodes[0] = unreachable(primary(0), 1) },
	}
	for name, change := range cases {
		obs := obsAt(1, spec, primary(0), replica(1, 100), replica(2, 100))
		obs.Sentinels = monitoredSentinels(0, 2)
		change(&obs)
		if got := monitorsOf(Decide(steadyState(), obs)); len(got) != 0 {
			t.Errorf("%s: told %v", name, got)
		}
	}
}

// A sentinel that monitors the group under the recorded epoch with other settings than the
// spec's is given the spec's.
func TestSentinelsTakeTheSpecsSettings(t *testing.T) {
	spec := sentinelMonitorSpec()
	obs := obsAt(1, spec, primary(0), replica(1, 100), replica(2, 100))
	obs.Sentinels = monitoredSentinels(0)
	obs.Sentinels[2].Settings.DownAfterMillis = 30000
	got := monitorsOf(Decide(steadyState(), obs))
	if len(got) != 1 || got[0].Sentinel != "sentinel-2" || got[0].Settings != testSentinelSettings {
		t.Fatalf("want sentinel-2 given the spec's settings, got %v", got)
	}
}

// A spec without a quorum tells the sentinels a majority of them (SENTINEL MONITOR refuses 0),
// and a sentinel monitoring with that majority is not told again: the value told and the value
// compared are one.
func TestSentinelsWithoutASpecQuorumAreToldAMajority(t *testing.T) {
	spec := sentinelMonitorSpec()
	spec.SentinelSettings.Quorum = 0
	obs := obsAt(1, spec, primary(0), replica(1, 100), replica(2, 100))
	obs.Sentinels = monitoredSentinels(0, 2)
	got := monitorsOf(Decide(steadyState(), obs))
	if len(got) != 1 || got[0].Sentinel != "sentinel-2" || got[0].Settings.Quorum != 2 {
		t.Fatalf("want only sentinel-2 told, with quorum 2 (a majority of 3), got %+v", got)
	}
}

// Every sentinel lost its file after a failover (recorded epoch 3): no hello brings epoch 3
// back, so the record goes back to epoch 0 (a majority answering), and then all are told.
func TestSentinelsThatAllLostTheGroupStartAgainUnderEpochZero(t *testing.T) {
	spec := sentinelMonitorSpec()
	p := steadyState()
	p.Shards[0].ClaimEpoch = 3

	obs := obsAt(1, spec, primary(0), replica(1, 100), replica(2, 100))
	obs.Sentinels = monitoredSentinels(0, 0, 1, 2)
	obs.Sentinels[2].Reachable = false
	obs.Sentinels[1].Reachable = false
	if d := Decide(p, obs); d.Transition != nil || len(monitorsOf(d)) != 0 {
		t.Fatalf("one sentinel of three answering: want nothing, got %v %v", d.Transition, d.Actions)
	}

	obs.Sentinels[1].Reachable = true
	d := Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventSentinelEpochReset || d.Next.Shards[0].ClaimEpoch != 0 || d.Next.State != Steady {
		t.Fatalf("want sentinel-epoch-reset to epoch 0, got %+v", d.Transition)
	}
	if !strings.Contains(d.Transition.Message, "none the recorded epoch 3") {
		t.Errorf("message %q does not say why", d.Transition.Message)
	}
	if p.Shards[0].ClaimEpoch != 3 {
		t.Fatal("the guard changed the persisted record it was given")
	}
	if got := monitorsOf(Decide(d.Next, obs)); len(got) != 2 {
		t.Fatalf("under epoch 0 every sentinel that answers is told: got %v", got)
	}

	// One still under epoch 3 (it kept its file): no reset, it is the one the others follow.
	obs.Sentinels = monitoredSentinels(3, 0, 1)
	if d := Decide(p, obs); d.Transition != nil {
		t.Fatalf("a sentinel under the recorded epoch: want no reset, got %s", d.Transition.Event)
	}
}

// A sentinel that knows more other sentinels than the spec runs (a re-created sentinel's old
// id) is reset, one at a time: none while another still knows fewer (a reset one finding the
// others again), and none while the group moves.
func TestASentinelWithAStalePeerIsReset(t *testing.T) {
	spec := sentinelMonitorSpec()
	obsWith := func(peers ...int) Observation {
		obs := obsAt(1, spec, primary(0), replica(1, 100), replica(2, 100))
		obs.Sentinels = withReplicas(monitoredSentinels(0), SentinelReplica{IP: "10.0.0.2", Priority: 100}, SentinelReplica{IP: "10.0.0.3", Priority: 100})
		for i := range obs.Sentinels {
			obs.Sentinels[i].Peers = peers[i]
		}
		return obs
	}
	resets := func(d Decision) []string { return actionsOf(d, "sentinel-reset") }
	if got := resets(Decide(steadyState(), obsWith(2, 3, 2))); len(got) != 1 || got[0] != "sentinel-reset sentinel-1" {
		t.Fatalf("want sentinel-1 reset, got %v", got)
	}
	if got := resets(Decide(steadyState(), obsWith(3, 3, 2))); len(got) != 1 || got[0] != "sentinel-reset sentinel-0" {
		t.Fatalf("want one reset at a time, got %v", got)
	}
	d := Decide(steadyState(), obsWith(1, 3, 2))
	if got := resets(d); len(got) != 0 {
		t.Fatalf("sentinel-0 still finds the others again: want no reset, got %v", got)
	}
	if d.Waiting.Kind != WaitSentinelsRelearning || !strings.Contains(d.Waiting.String(), "sentinel-1 knows another sentinel that no longer runs") {
		t.Fatalf("waiting %q (%v): the reset that is due must keep the cluster from looking settled", d.Waiting, d.Waiting.Kind)
	}
	if got := resets(Decide(steadyState(), obsWith(2, 2, 2))); len(got) != 0 {
		t.Fatalf("no stale peer: want no reset, got %v", got)
	}
	moving := obsWith(2, 3, 2)
	moving.Sentinels[0].PrimaryDown = true
	if got := resets(Decide(steadyState(), moving)); len(got) != 0 {
		t.Fatalf("a sentinel finds the primary down: want no reset, got %v", got)
	}
	out := obsWith(2, 3, 2)
	out.Sentinels[2].Reachable = false
	if got := resets(Decide(steadyState(), out)); len(got) != 0 {
		t.Fatalf("a sentinel out of sight: want no reset, got %v", got)
	}
}

// A sentinel that lists a replica at an address no pod has (a pod removed by a scale-down, or
// re-created elsewhere) is reset once the cluster is converged, one at a time: none while
// another lists fewer of the linked replicas than there are (a reset one finding them again
// from the primary's INFO).
func TestASentinelListingAGoneReplicaIsReset(t *testing.T) {
	spec := sentinelMonitorSpec()
	known := []SentinelReplica{{IP: "10.0.0.2", Priority: 100}, {IP: "10.0.0.3", Priority: 100}}
	obsWith := func(lists ...[]SentinelReplica) Observation {
		obs := obsAt(1, spec, primary(0), openReplica(1, 100), openReplica(2, 100))
		obs.Sentinels = monitoredSentinels(0)
		for i := range obs.Sentinels {
			obs.Sentinels[i].Peers, obs.Sentinels[i].Replicas = 2, lists[i]
		}
		return obs
	}
	gone := append([]SentinelReplica{{IP: "10.0.0.9", Priority: 100}}, known...)
	resets := func(d Decision) []string { return actionsOf(d, "sentinel-reset") }
	if got := resets(Decide(steadyState(), obsWith(known, gone, gone))); len(got) != 1 || got[0] != "sentinel-reset sentinel-1" {
		t.Fatalf("want sentinel-1 reset, got %v", got)
	}
	d := Decide(steadyState(), obsWith(known[:1], gone, known))
	if got := resets(d); len(got) != 0 || d.Waiting.Kind != WaitSentinelsRelearning {
		t.Fatalf("sentinel-0 still finds the replicas again: want no reset and the wait, got %v, %q", got, d.Waiting)
	}
	if got := resets(Decide(steadyState(), obsWith(known, known, known))); len(got) != 0 {
		t.Fatalf("no gone replica: want no reset, got %v", got)
	}
	// Not converged (a replica not opened yet): no reset.
	obs := obsWith(known, gone, known)
	obs.Nodes[2] = replica(2, 100)
	if got := resets(Decide(steadyState(), obs)); len(got) != 0 {
		t.Fatalf("not converged: want no reset, got %v", got)
	}
}
