package machine

import (
	"strings"
	"testing"
)

// takeOverObs is the cluster with its primary lost (FailureThreshold probes failed), its
// replicas detached, and the sentinels given.
func takeOverObs(sec int, sentinels []Sentinel) Observation {
	obs := obsAt(sec, sentinelMonitorSpec(), unreachable(primary(0), 3), detached(replica(1, 100)), detached(replica(2, 90)))
	obs.Sentinels = sentinels
	return obs
}

// The primary is lost while fewer than the quorum of the sentinels monitor the group (lost
// before they were all told it): no failover can start, so the group is removed from those
// that monitor it, and once every sentinel answers monitoring nothing the machine takes the
// failover over, with the Replication topology's rules from then on.
func TestTheMachineTakesOverAFailoverNoSentinelCanMake(t *testing.T) {
	p := steadyState()

	d := Decide(p, takeOverObs(1, monitoredSentinels(0, 1, 2)))
	if d.Transition == nil || d.Transition.Event != EventSentinelFailover || !strings.Contains(d.Transition.Message, "the sentinels decide") {
		t.Fatalf("want the lost primary recorded (sentinel-failover), got %+v", d.Transition)
	}
	if got := actionsOf(d, "sentinel-remove"); len(got) != 1 || got[0] != "sentinel-remove sentinel-0" {
		t.Fatalf("want the group removed from sentinel-0, got %v", d.Actions)
	}
	if d.Waiting.Kind != WaitSentinelTakeOver || !strings.Contains(d.Waiting.String(), "fewer than the quorum (2)") {
		t.Fatalf("waiting %q (%v)", d.Waiting, d.Waiting.Kind)
	}
	for _, kind := range []string{"promote", "detach", "seal", "replica-of"} {
		if got := actionsOf(d, kind); len(got) > 0 {
			t.Fatalf("%v while a sentinel still monitors the group", got)
		}
	}
	p = d.Next

	d = Decide(p, takeOverObs(2, monitoredSentinels(0, 0, 1, 2)))
	if d.Transition == nil || d.Transition.Event != EventSentinelTakeOver || d.Next.State != FailingOver || !d.Next.Op.Election.TakenOver {
		t.Fatalf("want sentinel-take-over to FailingOver, got %+v", d.Transition)
	}
	p = d.Next

	// From here the Replication topology's rules: the node holding every other's data is
	// elected (s0-1, offset 100), the take-over stays the machine's.
	d = Decide(p, takeOverObs(3, monitoredSentinels(0, 0, 1, 2)))
	if d.Transition == nil || d.Transition.Event != EventCandidateElected || d.Next.Op.Election.Candidate != "s0-1" || !d.Next.Op.Election.TakenOver {
		t.Fatalf("want s0-1 elected in the take-over, got %+v (%v)", d.Transition, d.Next.Op.Election)
	}
	if got := actionsOf(d, "promote"); len(got) != 1 {
		t.Fatalf("want s0-1 promoted, got %v", d.Actions)
	}
}

// Two sentinels of three monitor the group (the quorum): they may still fail it over, so the
// machine does not touch them until their failover has had twice failover-timeout.
func TestTheMachineLeavesAFailoverToAQuorumOfSentinels(t *testing.T) {
	d := Decide(steadyState(), takeOverObs(1, monitoredSentinels(0, 2)))
	if d.Transition == nil || d.Transition.Event != EventSentinelFailover {
		t.Fatalf("want the lost primary recorded, got %+v", d.Transition)
	}
	d = Decide(d.Next, takeOverObs(2, monitoredSentinels(0, 2)))
	if d.Transition != nil || len(actionsOf(d, "sentinel-remove")) > 0 || d.Waiting.Kind != WaitSentinelFailover {
		t.Fatalf("want the sentinels left to decide, got %v %v %q", d.Transition, d.Actions, d.Waiting)
	}
}

// A sentinel that does not answer may still fail the group over, or come back naming the old
// primary under a newer epoch: nothing is removed and nothing taken over.
func TestTheMachineTakesNothingOverWhileASentinelIsOutOfSight(t *testing.T) {
	s := monitoredSentinels(0, 1, 2)
	s[2].Reachable = false
	p := Decide(steadyState(), takeOverObs(1, s)).Next
	if p.State != FailingOver {
		t.Fatalf("want the lost primary recorded, got %s", p.State)
	}
	for sec := 2; sec < 200; sec += 20 {
		if d := Decide(p, takeOverObs(sec, s)); d.Transition != nil || len(actionsOf(d, "sentinel-remove")) > 0 {
			t.Fatalf("t=%d: a sentinel out of sight: want nothing, got %v %v", sec, d.Transition, d.Actions)
		}
	}
	s = monitoredSentinels(0, 0, 1, 2)
	s[1].Reachable = false
	if d := Decide(p, takeOverObs(2, s)); d.Transition != nil {
		t.Fatalf("a sentinel out of sight: want no take-over, got %s", d.Transition.Event)
	}
}

// A failover of the sentinels that has not produced a primary the machine may record after
// twice failover-timeout (Sentinel retries no sooner) is taken over: the group is removed
// from every sentinel, then the machine fails the primary over.
func TestTheMachineTakesOverAFailoverTheSentinelsCannotFinish(t *testing.T) {
	p := steadyState()
	s := monitoredSentinels(0)
	s[0].FailingOver, s[0].PrimaryDown = true, true
	d := Decide(p, takeOverObs(1, s))
	if d.Transition == nil || d.Transition.Event != EventSentinelFailover {
		t.Fatalf("want sentinel-failover, got %+v", d.Transition)
	}
	p = d.Next
	timeout := int(sentinelMonitorSpec().SentinelSettings.FailoverTimeoutMillis / 1000)

	d = Decide(p, takeOverObs(1+2*timeout-1, s))
	if got := actionsOf(d, "sentinel-remove"); len(got) != 0 || d.Transition != nil {
		t.Fatalf("before twice failover-timeout: want nothing, got %v %v", d.Transition, d.Actions)
	}
	d = Decide(p, takeOverObs(1+2*timeout, s))
	if got := actionsOf(d, "sentinel-remove"); len(got) != 3 || d.Waiting.Kind != WaitSentinelTakeOver {
		t.Fatalf("after twice failover-timeout: want the group removed from all three, got %v, waiting %q", d.Actions, d.Waiting)
	}
	d = Decide(p, takeOverObs(2+2*timeout, monitoredSentinels(0, 0, 1, 2)))
	if d.Transition == nil || d.Transition.Event != EventSentinelTakeOver || !d.Next.Op.Election.TakenOver {
		t.Fatalf("want sentinel-take-over, got %+v", d.Transition)
	}
}

// The sentinels' failover recorded by another operator incarnation cannot be timed on this
// one's clock: it is timed again from the first observation on it, and taken over twice
// failover-timeout later.
func TestTheSentinelsFailoverIsTimedAgainOnANewOperatorClock(t *testing.T) {
	s := monitoredSentinels(0)
	s[0].FailingOver, s[0].PrimaryDown = true, true
	obs := takeOverObs(1, s)
	obs.Clock = "old"
	p := Decide(steadyState(), obs).Next
	if p.State != FailingOver || p.Clock != "old" {
		t.Fatalf("want FailingOver on the old clock, got %s on %q", p.State, p.Clock)
	}
	timeout := int(sentinelMonitorSpec().SentinelSettings.FailoverTimeoutMillis / 1000)

	obs = takeOverObs(1+3*timeout, s)
	obs.Clock = "new"
	d := Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventSentinelClockReset || d.Next.Clock != "new" || !d.Next.Since.Equal(obs.Time) {
		t.Fatalf("want sentinel-clock-reset onto the new clock, got %+v", d.Transition)
	}
	if got := actionsOf(d, "sentinel-remove"); len(got) != 0 {
		t.Fatalf("timed from now: want nothing removed yet, got %v", got)
	}
	p = d.Next

	obs = takeOverObs(1+5*timeout, s)
	obs.Clock = "new"
	if d := Decide(p, obs); d.Transition != nil || len(actionsOf(d, "sentinel-remove")) != 3 {
		t.Fatalf("twice failover-timeout on the new clock: want the group removed from all three, got %v %v", d.Transition, d.Actions)
	}
}

// A node the sentinels promoted with data (h2, continuing h1 up to offset 100) does not stop
// the take-over while every other node is on h1 short of the promotion: their data is a prefix
// of the pick's. One that followed the old primary past the promotion (offset 120 of h1) holds
// writes off the line: nothing is taken over, and the sentinels and a person decide.
func TestTheMachineTakesOverASentinelPickOnlyBesideItsLine(t *testing.T) {
	obsWith := func(sec int, offset int64, sentinels []Sentinel) Observation {
		obs := takeOverObs(sec, sentinels)
		obs.Nodes[1] = promotedBySentinel(100)
		obs.Nodes[2] = detached(replica(2, offset))
		return obs
	}
	p := Decide(steadyState(), obsWith(1, 90, monitoredSentinels(0, 1, 2))).Next
	if d := Decide(p, obsWith(2, 90, monitoredSentinels(0, 1, 2))); len(actionsOf(d, "sentinel-remove")) != 1 {
		t.Fatalf("a pick with data and a replica short of its promotion: want the group removed from sentinel-0, got %v (waiting %q)", d.Actions, d.Waiting)
	}
	if d := Decide(p, obsWith(2, 90, monitoredSentinels(0, 0, 1, 2))); d.Transition == nil || d.Transition.Event != EventSentinelTakeOver {
		t.Fatalf("a pick with data and a replica short of its promotion: want sentinel-take-over, got %+v", d.Transition)
	}
	if d := Decide(p, obsWith(2, 120, monitoredSentinels(0, 1, 2))); len(actionsOf(d, "sentinel-remove")) > 0 {
		t.Fatalf("a replica past the promotion: want nothing removed, got %v", d.Actions)
	}
	if d := Decide(p, obsWith(2, 120, monitoredSentinels(0, 0, 1, 2))); d.Transition != nil && d.Transition.Event == EventSentinelTakeOver {
		t.Fatal("a replica past the promotion: want no take-over")
	}
}

// The recorded primary, promoted by the sentinels from h1 at offset 100, is lost before a
// replica still on h1 synced from it. That replica holds a prefix of the line: the take-over
// runs. One that followed the old primary past the promotion (offset 101 of h1) holds writes
// off the line, and the take-over waits.
func TestTheMachineTakesOverBesideAReplicaShortOfThePromotion(t *testing.T) {
	p := steadyState()
	p.Shards[0].History = History{ID: "h2", PrevID: "h1", PrevEnd: 101}
	obsWith := func(offset int64) Observation {
		onLine := detached(node(2, RoleReplica, "h2", 105))
		obs := obsAt(1, sentinelMonitorSpec(), unreachable(primary(0), 3), detached(replica(1, offset)), onLine)
		obs.Nodes[0].Valkey.ReplID = "h2"
		obs.Sentinels = monitoredSentinels(0, 1, 2)
		return obs
	}
	d := Decide(p, obsWith(100))
	if got := actionsOf(d, "sentinel-remove"); len(got) != 1 || !strings.Contains(got[0], "sentinel-0") {
		t.Fatalf("a replica short of the promotion: want the group removed from sentinel-0, got %v (waiting %q)", d.Actions, d.Waiting)
	}
	d = Decide(p, obsWith(101))
	if got := actionsOf(d, "sentinel-remove"); len(got) != 0 {
		t.Fatalf("a replica past the promotion: want nothing removed, got %v", got)
	}
}

// A person's FAILOVER TO moved the role from the recorded primary s0-0 (h1) to s0-2, which
// took h2 continuing h1 up to offset 100, and whose pod was then deleted (back empty). s0-0
// follows it on h2, and s0-1, which follows s0-0, took h2 too. No sentinel can fail over a
// primary that reports itself a replica with no replica they may promote, so after twice
// failover-timeout the group is removed: every node with data is on h2. With s0-1 on h1 past
// the hand-over (writes s0-0 took after it), nothing is.
func TestTheMachineTakesOverAfterAPersonsHandOver(t *testing.T) {
	onH2 := func(n Node) Node {
		n.Valkey.ReplID, n.Valkey.ReplID2, n.Valkey.SecondOffset = "h2", "h1", 101
		return n
	}
	obsWith := func(sec int, other Node) Observation {
		restarted := detached(node(2, RoleReplica, "h9", 0)) // its pod was deleted: back empty
		obs := obsAt(sec, sentinelMonitorSpec(), onH2(node(0, RoleReplica, "h2", 110)), other, restarted)
		obs.Sentinels = monitoredSentinels(0)
		obs.Sentinels[0].FailingOver, obs.Sentinels[0].PrimaryDown = true, true
		return obs
	}
	chained := onH2(replica(1, 110))
	d := Decide(steadyState(), obsWith(1, chained))
	if d.Transition == nil || d.Transition.Event != EventSentinelFailover {
		t.Fatalf("want sentinel-failover, got %+v", d.Transition)
	}
	p := d.Next
	timeout := int(sentinelMonitorSpec().SentinelSettings.FailoverTimeoutMillis / 1000)
	if d := Decide(p, obsWith(1+2*timeout, chained)); len(actionsOf(d, "sentinel-remove")) != 3 {
		t.Fatalf("after twice failover-timeout: want the group removed from all three, got %v (waiting %q)", d.Actions, d.Waiting)
	}
	d = Decide(p, obsWith(1+2*timeout, detached(replica(1, 120))))
	if len(actionsOf(d, "sentinel-remove")) != 0 {
		t.Fatalf("a replica past the hand-over: want nothing removed, got %v", d.Actions)
	}
	// The status says what stands in the way of the take-over, and what a person can do.
	if w := d.Waiting.String(); d.Waiting.Kind != WaitSentinelFailover || !strings.Contains(w, "does not take it over: s0-1 holds writes off the recorded line") || !strings.Contains(w, "SENTINEL MONITOR") {
		t.Fatalf("waiting %q (%v), want the take-over's blocker named", w, d.Waiting.Kind)
	}
}
