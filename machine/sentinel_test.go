package machine

import (
	"fmt"
	"strings"
	"testing"
)

func sentinelSpec() Spec {
	s := testSpec(2)
	s.Mode, s.Sentinels = ModeSentinel, 3
	return s
}

// sentinels are three sentinels that answer, the first n naming ip under epoch, the others
// the first primary (10.0.0.1) under epoch 0.
func sentinels(n int, ip string, epoch uint64) []Sentinel {
	var out []Sentinel
	for i := range 3 {
		s := Sentinel{Name: fmt.Sprintf("sentinel-%d", i), Reachable: true, Monitoring: true, PrimaryIP: "10.0.0.1"}
		if i < n {
			s.PrimaryIP, s.ConfigEpoch = ip, epoch
		}
		out = append(out, s)
	}
	return out
}

// promotedBySentinel is replica 1 made a primary by Sentinel's REPLICAOF NO ONE: a new
// history continuing h1, open.
func promotedBySentinel(offset int64) Node {
	n := node(1, RolePrimary, "h2", offset)
	n.Valkey.ReplID2, n.Valkey.SecondOffset = "h1", offset+1
	n.Valkey.WritesFenced, n.Valkey.SyncFenced = false, false
	return n
}

// A lost primary is recorded (sentinel-failover, once FailureThreshold probes failed), and
// while a quorum of the sentinels monitor the group the machine promotes nothing: the
// sentinels decide.
func TestSentinelModeNeverPromotesALostPrimary(t *testing.T) {
	spec := sentinelSpec()
	p := steadyState()
	for sec := 1; sec <= 10; sec++ {
		obs := obsAt(sec, spec, unreachable(primary(0), sec), detached(replica(1, 100)), detached(replica(2, 90)))
		obs.Sentinels = sentinels(0, "", 0)
		d := Decide(p, obs)
		if d.Transition != nil && (d.Transition.Event != EventSentinelFailover || sec < spec.FailureThreshold) {
			t.Fatalf("t=%d: the machine took %s in the Sentinel topology on its own", sec, d.Transition.Event)
		}
		for _, kind := range []string{"promote", "detach", "seal", "replica-of"} {
			if got := actionsOf(d, kind); len(got) > 0 {
				t.Fatalf("t=%d: %v while the sentinels decide", sec, got)
			}
		}
		if (d.Waiting.Kind != WaitSentinelsDecide && d.Waiting.Kind != WaitSentinelFailover) || !strings.Contains(d.Waiting.String(), "3 of 3 sentinels answer") {
			t.Fatalf("t=%d: waiting %q (%v), want the sentinels deciding", sec, d.Waiting, d.Waiting.Kind)
		}
		p = d.Next
	}
}

func TestSentinelModeRecordsTheFailoverTheSentinelsMade(t *testing.T) {
	spec := sentinelSpec()
	p := steadyState()

	// One sentinel leads a failover: recorded as under way, nothing moved by the machine.
	obs := obsAt(1, spec, unreachable(primary(0), 1), replica(1, 100), replica(2, 90))
	obs.Sentinels = sentinels(0, "", 0)
	obs.Sentinels[2].FailingOver = true
	d := Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventSentinelFailover || d.Next.State != FailingOver {
		t.Fatalf("want sentinel-failover, got %+v", d.Transition)
	}
	if len(d.Actions) != 0 || d.Waiting.Kind != WaitSentinelFailover {
		t.Fatalf("failing over: actions %v, waiting %q", d.Actions, d.Waiting)
	}
	p = d.Next

	// One sentinel switched to s0-1: no majority yet.
	obs = obsAt(2, spec, unreachable(primary(0), 2), promotedBySentinel(100), replica(2, 90))
	obs.Sentinels = sentinels(1, "10.0.0.2", 1)
	if d = Decide(p, obs); d.Transition != nil {
		t.Fatalf("one sentinel of three is no decision: %s", d.Transition.Event)
	}

	// Two of three name s0-1 under epoch 1: recorded, and opened.
	obs = obsAt(3, spec, unreachable(primary(0), 3), promotedBySentinel(100), replica(2, 90))
	obs.Sentinels = sentinels(2, "10.0.0.2", 1)
	d = Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventSentinelPromoted || d.Next.State != Steady {
		t.Fatalf("want sentinel-promoted, got %+v", d.Transition)
	}
	rec := d.Next.Shards[0]
	if rec.Primary != "s0-1" || rec.ClaimEpoch != 1 || rec.History.ID != "h2" || rec.History.PrevID != "h1" {
		t.Fatalf("recorded %+v", rec)
	}
	p = d.Next

	// Only one sentinel answers the operator, naming the recorded primary: a minority says
	// nothing of what the others decided, so the machine re-points and fences nothing.
	obs = obsAt(4, spec, unreachable(primary(0), 4), promotedBySentinel(100), replica(2, 90))
	obs.Sentinels = sentinels(3, "10.0.0.2", 1)
	obs.Sentinels[1].Reachable, obs.Sentinels[2].Reachable = false, false
	d = Decide(p, obs)
	if got := append(actionsOf(d, "replica-of"), actionsOf(d, "fence")...); len(got) > 0 || d.Waiting.Kind != WaitSentinelsDisagree {
		t.Fatalf("with one sentinel of three seen: %v, waiting %q", got, d.Waiting)
	}

	// A majority agrees: s0-2, still on the old primary, is re-pointed (the third sentinel,
	// naming the old primary, is behind: it cannot fail over alone).
	obs = obsAt(5, spec, unreachable(primary(0), 5), promotedBySentinel(100), replica(2, 90))
	obs.Sentinels = sentinels(2, "10.0.0.2", 1)
	d = Decide(p, obs)
	if got := actionsOf(d, "replica-of"); len(got) != 1 || !strings.Contains(got[0], "s0-2") {
		t.Fatalf("with a majority agreeing: replica-of %v, waiting %q", got, d.Waiting)
	}
}

func TestSentinelModeFencesTheOldPrimaryItReaches(t *testing.T) {
	spec := sentinelSpec()
	p := steadyState()
	p.Shards = recordPrimary(p.Shards, 0, ptr(promotedBySentinel(100)))
	p.Shards[0].ClaimEpoch = 1
	// The old primary answers the operator, open, cut off from the sentinels.
	obs := obsAt(5, spec, primary(120), promotedBySentinel(100), replica(2, 90))
	obs.Sentinels = sentinels(3, "10.0.0.2", 1)
	d := Decide(p, obs)
	if got := actionsOf(d, "fence"); len(got) != 1 || !strings.Contains(got[0], "s0-0") {
		t.Fatalf("fence %v, want the old primary fenced", got)
	}
	// While the recorded primary is lost, the node one sentinel names under a newer epoch
	// than the record is Sentinel's pick on its way to a majority: left open. One no
	// sentinel names (promoted behind everyone's back) is fenced.
	obs = obsAt(6, spec, unreachable(primary(0), 2), promotedBySentinel(100), replica(2, 90))
	obs.Sentinels = sentinels(1, "10.0.0.2", 1)
	d = Decide(steadyState(), obs)
	if got := actionsOf(d, "fence"); d.Transition != nil || len(got) != 0 {
		t.Fatalf("transition %+v, fenced %v: the sentinels' pick under a newer epoch", d.Transition, got)
	}
	obs.Sentinels = sentinels(0, "", 0)
	d = Decide(steadyState(), obs)
	if got := actionsOf(d, "fence"); len(got) != 1 || !strings.Contains(got[0], "s0-1") {
		t.Fatalf("fenced %v: a primary no sentinel names must be fenced", got)
	}
}

// The recorded primary, open, answers the operator while a majority of the sentinels name
// another node under a newer epoch, and that node is gone (its pod re-created elsewhere): the
// sentinels replaced the recorded primary, and it is fenced whole, so that it takes no write
// their pick's replicas lack and their next failover does not pick it (replica-priority 0).
func TestSentinelModeFencesTheRecordedPrimaryTheSentinelsReplaced(t *testing.T) {
	spec := sentinelSpec()
	gone := unreachable(promotedBySentinel(100), 1)
	gone.Pod.IP = "10.0.0.9"
	obs := obsAt(5, spec, primary(90), gone, replica(2, 100))
	obs.Sentinels = sentinels(2, "10.0.0.2", 1)
	d := Decide(steadyState(), obs)
	if d.Transition == nil || d.Transition.Event != EventSentinelFailover {
		t.Fatalf("want sentinel-failover, got %+v", d.Transition)
	}
	if got := actionsOf(d, "fence"); len(got) != 1 || !strings.Contains(got[0], "s0-0") {
		t.Fatalf("fenced %v, want s0-0, the primary the sentinels replaced", got)
	}
	// Named by a majority under the recorded epoch, it is left open.
	obs.Sentinels = sentinels(0, "", 0)
	d = Decide(steadyState(), obs)
	if got := actionsOf(d, "fence"); len(got) != 0 {
		t.Fatalf("fenced %v: the sentinels name the recorded primary", got)
	}
}

// The sentinels' leader still reports the failover that chose the recorded primary while it
// reconfigures the replicas. The primary it replaced, writable again, is fenced then: it does
// not continue the recorded primary's history, so it is no pick of any failover of it. A
// primary that does continue it (the pick of a new failover) is left open.
func TestSentinelModeFencesTheReplacedPrimaryWhileTheLeaderFinishes(t *testing.T) {
	spec := sentinelSpec()
	p := steadyState()
	p.Shards = recordPrimary(p.Shards, 0, ptr(promotedBySentinel(100)))
	p.Shards[0].ClaimEpoch = 1
	leaderFinishing := func() []Sentinel {
		out := sentinels(3, "10.0.0.2", 1)
		out[0].FailingOver = true
		return out
	}
	obs := obsAt(5, spec, primary(120), promotedBySentinel(100), replica(2, 90))
	obs.Sentinels = leaderFinishing()
	d := Decide(p, obs)
	if got := actionsOf(d, "fence"); len(got) != 1 || !strings.Contains(got[0], "s0-0") {
		t.Fatalf("fence %v, want the replaced primary fenced while the leader finishes", got)
	}
	// s0-2 promoted from the recorded primary's history: a new failover's pick.
	pick := node(2, RolePrimary, "h3", 101)
	pick.Valkey.ReplID2, pick.Valkey.SecondOffset = "h2", 101
	pick.Valkey.WritesFenced, pick.Valkey.SyncFenced = false, false
	obs = obsAt(6, spec, replica(0, 100), promotedBySentinel(100), pick)
	obs.Sentinels = leaderFinishing()
	if got := actionsOf(Decide(p, obs), "fence"); len(got) != 0 {
		t.Fatalf("fenced %v: a primary continuing the recorded history may be a new failover's pick", got)
	}
	// With no majority naming the recorded primary, nothing is fenced during a failover.
	obs = obsAt(7, spec, primary(120), promotedBySentinel(100), replica(2, 90))
	obs.Sentinels = leaderFinishing()
	obs.Sentinels[1].PrimaryIP, obs.Sentinels[2].PrimaryIP = "10.0.0.1", "10.0.0.1"
	if got := actionsOf(Decide(p, obs), "fence"); len(got) != 0 {
		t.Fatalf("fenced %v while a failover runs that no majority has settled", got)
	}
}

func TestSentinelModeAbandonedFailoverKeepsThePrimary(t *testing.T) {
	spec := sentinelSpec()
	p := steadyState()
	obs := obsAt(1, spec, primary(10), replica(1, 10), replica(2, 10))
	obs.Sentinels = sentinels(0, "", 0)
	obs.Sentinels[0].FailingOver = true
	d := Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventSentinelFailover {
		t.Fatalf("want sentinel-failover, got %+v", d.Transition)
	}
	obs = obsAt(2, spec, primary(10), replica(1, 10), replica(2, 10))
	obs.Sentinels = sentinels(0, "", 0)
	d = Decide(d.Next, obs)
	if d.Transition == nil || d.Transition.Event != EventSentinelKeptPrimary || d.Next.Shards[0].Primary != "s0-0" {
		t.Fatalf("want sentinel-kept-primary keeping s0-0, got %+v", d.Transition)
	}
}

func TestSentinelModeSaysWhatItDoesNotCarryOut(t *testing.T) {
	spec := sentinelSpec()
	spec.Hibernate = true
	obs := obsAt(1, spec, primary(10), replica(1, 10), replica(2, 10))
	obs.Sentinels = sentinels(0, "", 0)
	d := Decide(steadyState(), obs)
	if d.Transition != nil || d.Waiting.Kind != WaitSentinelNotBuilt || !strings.Contains(d.Waiting.String(), "hibernation") {
		t.Fatalf("transition %+v, waiting %q", d.Transition, d.Waiting)
	}
}

func TestSentinelRulesApplyToTheSentinelTopologyAlone(t *testing.T) {
	// Replication mode with sentinels reporting a failover (a misconfigured observation):
	// the replication rules decide, the sentinel rows never fire.
	spec := testSpec(2)
	obs := obsAt(1, spec, primary(10), replica(1, 10), replica(2, 10))
	obs.Sentinels = sentinels(3, "10.0.0.2", 1)
	obs.Sentinels[0].FailingOver = true
	if d := Decide(steadyState(), obs); d.Transition != nil {
		t.Fatalf("replication mode took %s", d.Transition.Event)
	}
}

func ptr[T any](v T) *T { return &v }

// Found by review: the machine must not re-admit (promote) the sentinels' master while a
// sentinel leads a failover of it: the leader's pick wins, and what the re-admitted node
// took would be lost.
func TestSentinelModeReadmitsNothingDuringAFailover(t *testing.T) {
	spec := sentinelSpec()
	m := node(0, RoleReplica, "h1", 0)
	m.Valkey.RunID, m.Valkey.WritesFenced, m.Valkey.SyncFenced = "run-0b", true, true
	r1, r2 := detached(node(1, RoleReplica, "h1", 0)), detached(node(2, RoleReplica, "h1", 0))
	obs := obsAt(1, spec, m, r1, r2)
	obs.Sentinels = sentinels(0, "", 0)
	for i := range obs.Sentinels {
		obs.Sentinels[i].PrimaryDown = true
	}
	obs.Sentinels[1].FailingOver = true
	d := Decide(steadyState(), obs)
	if d.Transition != nil && d.Transition.Event == EventPrimaryReadmitted || len(actionsOf(d, "promote")) > 0 {
		t.Fatalf("re-admitted during a failover: %+v %v", d.Transition, d.Actions)
	}
	// The failover over (aborted), no sentinel leads one: the empty master is re-admitted.
	for i := range obs.Sentinels {
		obs.Sentinels[i].FailingOver = false
	}
	obs.Time = at(2)
	d = Decide(d.Next, obs)
	if d.Transition == nil || d.Transition.Event != EventPrimaryReadmitted {
		t.Fatalf("want primary-readmitted once no failover runs, got %+v", d.Transition)
	}
}

// Sentinels that lost their files start their epochs again: what a majority names under a lower
// epoch than the recorded one is still what they decided, and the node they name is not fenced.
func TestSentinelModeFollowsSentinelsWhoseEpochsRestarted(t *testing.T) {
	spec := sentinelSpec()
	p := steadyState()
	p.Shards[0].ClaimEpoch = 3
	obs := obsAt(1, spec, unreachable(primary(0), 1), promotedBySentinel(100), replica(2, 90))
	obs.Sentinels = sentinels(3, "10.0.0.2", 1)
	d := Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventSentinelPromoted || d.Next.Shards[0].Primary != "s0-1" || d.Next.Shards[0].ClaimEpoch != 1 {
		t.Fatalf("want s0-1 recorded under epoch 1, got %+v", d.Transition)
	}
	if got := actionsOf(d, "fence"); len(got) > 0 {
		t.Fatalf("fenced the sentinels' choice: %v", got)
	}
}

// A failover of a primary the sentinels chose is a failover too: the leader's flags while it
// reconfigured the replicas after the first one must not hide the next.
func TestSentinelModeSeesTheSecondFailover(t *testing.T) {
	spec := sentinelSpec()
	p := steadyState()
	p.Shards = recordPrimary(p.Shards, 0, ptr(promotedBySentinel(100)))
	p.Shards[0].ClaimEpoch = 1
	obs := obsAt(1, spec, primary(0), unreachable(promotedBySentinel(100), 3), replica(2, 90))
	obs.Nodes[0] = detached(node(0, RoleReplica, "h2", 100))
	obs.Sentinels = sentinels(3, "10.0.0.2", 1)
	for i := range obs.Sentinels {
		obs.Sentinels[i].PrimaryDown = true
	}
	obs.Sentinels[0].FailingOver = true
	d := Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventSentinelFailover {
		t.Fatalf("want sentinel-failover, got %+v", d.Transition)
	}
}

func TestSentinelModeWithoutSentinelsInTheSpecDecidesNothing(t *testing.T) {
	spec := sentinelSpec()
	spec.Sentinels = 0
	obs := obsAt(1, spec, unreachable(primary(0), 1), promotedBySentinel(100), replica(2, 90))
	obs.Sentinels = sentinels(1, "10.0.0.2", 1)[:1]
	if d := Decide(steadyState(), obs); d.Transition != nil {
		t.Fatalf("one observed sentinel of none in the spec decided %s", d.Transition.Event)
	}
}
