package machine

import (
	"sort"
	"strings"
	"testing"
)

// openReplica is a replica the operator opened as a sync source (the Sentinel topology's
// converged replicas).
func openReplica(ord int, offset int64) Node {
	n := replica(ord, offset)
	n.Valkey.WritesFenced, n.Valkey.SyncFenced = false, false
	return n
}

// withReplicas gives every sentinel the same view of the replicas' priorities.
func withReplicas(ss []Sentinel, rs ...SentinelReplica) []Sentinel {
	for i := range ss {
		ss[i].Replicas = rs
	}
	return ss
}

// A requested switchover in the Sentinel topology: every replica but the target is held back,
// the hand-over is sent to a sentinel only once it has read their priorities, and the
// sentinels' failover to the target is recorded with its epoch; then converge opens the old
// primary and gives the held-back replica its priority back. The machine promotes nothing
// itself.
func TestSentinelModeHandsOverThroughASentinel(t *testing.T) {
	spec := sentinelSpec()
	spec.Switchover = &Switchover{Shard: 0, To: "s0-1"}
	obs := obsAt(1, spec, primary(10), openReplica(1, 10), openReplica(2, 10))
	obs.Sentinels = withReplicas(sentinels(0, "", 0), SentinelReplica{IP: "10.0.0.2", Priority: 100}, SentinelReplica{IP: "10.0.0.3", Priority: 100})
	d := Decide(steadyState(), obs)
	if d.Transition == nil || d.Transition.Event != EventSwitchoverRequested || d.Transition.To != FailingOver || !d.Next.Op.Election.Planned {
		t.Fatalf("want switchover-requested into a planned FailingOver, got %+v", d.Transition)
	}
	if got := actionsOf(d, "hold-back"); len(got) != 1 || got[0] != "hold-back s0-2" {
		t.Fatalf("held back %v, want s0-2 alone", got)
	}
	if got := actionsOf(d, "sentinel-hand-over"); len(got) != 0 {
		t.Fatalf("%v before s0-2 was held back", got)
	}
	p := d.Next

	// Held back, but no sentinel has read it yet: wait, and say so.
	held := openReplica(2, 10)
	held.Valkey.HeldBack = true
	obs = obsAt(2, spec, primary(10), openReplica(1, 10), held)
	obs.Sentinels = withReplicas(sentinels(0, "", 0), SentinelReplica{IP: "10.0.0.2", Priority: 100}, SentinelReplica{IP: "10.0.0.3", Priority: 100})
	d = Decide(p, obs)
	if d.Transition != nil || len(actionsOf(d, "sentinel-hand-over")) != 0 || d.Waiting.Kind != WaitSentinelHandOver || !strings.Contains(d.Waiting.String(), "10.0.0.3=100") {
		t.Fatalf("transition %+v, actions %v, waiting %q: want the wait for the sentinels to read the priorities", d.Transition, d.Actions, d.Waiting)
	}

	// A sentinel has read it: the hand-over goes through that one.
	obs.Sentinels[1].Replicas = []SentinelReplica{{IP: "10.0.0.2", Priority: 100}, {IP: "10.0.0.3", Priority: 0}}
	d = Decide(p, obs)
	if got := actionsOf(d, "sentinel-hand-over"); len(got) != 1 || got[0] != "sentinel-hand-over sentinel-1: s0-0 -> s0-1" {
		t.Fatalf("hand-over %v, want one through sentinel-1", got)
	}

	// A sentinel leads the failover: the machine waits and changes nothing.
	obs.Sentinels[1].FailingOver = true
	d = Decide(p, obs)
	if d.Transition != nil || len(d.Actions) > 0 && len(actionsOf(d, "ensure-objects")) != len(d.Actions) {
		t.Fatalf("transition %+v, actions %v while the sentinel fails over", d.Transition, d.Actions)
	}

	// The sentinels name the target under epoch 1: recorded, with the epoch.
	old := replica(0, 12)
	old.Valkey.PrimaryHost, old.Valkey.WritesFenced, old.Valkey.SyncFenced = "10.0.0.2", true, false
	moved := openReplica(2, 12)
	moved.Valkey.PrimaryHost, moved.Valkey.HeldBack = "10.0.0.2", true
	obs = obsAt(3, spec, old, promotedBySentinel(12), moved)
	obs.Sentinels = sentinels(3, "10.0.0.2", 1)
	d = Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventSentinelPromoted || d.Next.Shards[0].Primary != "s0-1" || d.Next.Shards[0].ClaimEpoch != 1 ||
		!strings.Contains(d.Transition.Message, "the requested hand-over to s0-1") {
		t.Fatalf("want sentinel-promoted recording s0-1 under epoch 1, got %+v", d.Transition)
	}
	if AnswerSwitchover(d.Next, obs, spec.Switchover) != SwitchoverDone {
		t.Fatal("the switchover is not answered done")
	}

	// Steady: the old primary, closed, and the held-back replica are opened.
	spec.Switchover = nil
	obs.Spec = spec
	d = Decide(d.Next, obs)
	got := actionsOf(d, "open-writes")
	sort.Strings(got)
	if len(got) != 2 || got[0] != "open-writes s0-0" || got[1] != "open-writes s0-2" {
		t.Fatalf("opened %v, want s0-0 and s0-2", got)
	}
}

// A switchover waits, said why, while the sentinels do not all agree on the recorded primary:
// a hand-over is asked only of sentinels that agree.
func TestSentinelModeSwitchoverWaitsForEverySentinel(t *testing.T) {
	spec := sentinelSpec()
	spec.Switchover = &Switchover{Shard: 0, To: "s0-1"}
	obs := obsAt(1, spec, primary(10), openReplica(1, 10), openReplica(2, 10))
	obs.Sentinels = sentinels(0, "", 0)
	obs.Sentinels[2] = Sentinel{Name: "sentinel-2"}
	d := Decide(steadyState(), obs)
	if d.Transition != nil || d.Waiting.Kind != WaitSwitchover || !strings.Contains(d.Waiting.String(), "not every sentinel answers") {
		t.Fatalf("transition %+v, waiting %q", d.Transition, d.Waiting)
	}
}

// The request withdrawn before the hand-over was sent: the hand-over ends, and converge opens
// what it held back.
func TestSentinelModeHandOverWithdrawn(t *testing.T) {
	spec := sentinelSpec()
	spec.Switchover = &Switchover{Shard: 0, To: "s0-1"}
	obs := obsAt(1, spec, primary(10), openReplica(1, 10), openReplica(2, 10))
	obs.Sentinels = sentinels(0, "", 0)
	d := Decide(steadyState(), obs)
	if d.Transition == nil || d.Transition.Event != EventSwitchoverRequested {
		t.Fatalf("want switchover-requested, got %+v", d.Transition)
	}
	spec.Switchover = nil
	held := openReplica(2, 10)
	held.Valkey.HeldBack = true
	obs = obsAt(2, spec, primary(10), openReplica(1, 10), held)
	obs.Sentinels = sentinels(0, "", 0)
	d = Decide(d.Next, obs)
	if d.Transition == nil || d.Transition.Event != EventSwitchoverStale || d.Next.State != Steady {
		t.Fatalf("want switchover-stale, got %+v", d.Transition)
	}
	if got := actionsOf(d, "open-writes"); len(got) != 1 || got[0] != "open-writes s0-2" {
		t.Fatalf("opened %v, want s0-2", got)
	}
}

// The sentinels pick a node whose client writes are closed but which still serves replicas
// (a primary a hand-over closed, or one not opened yet), and another node holds data it
// lacks: the machine fences it whole while it waits, so that the replicas the sentinels
// re-point at it cannot resync from it and lose that data.
func TestSentinelModePickThatLacksDataIsClosedToReplicas(t *testing.T) {
	spec := sentinelSpec()
	p := steadyState()
	p.State = FailingOver
	p.Op = Operation{Election: Election{Shard: 0, Lost: "s0-0", LostRunID: "run-0", LostHistory: History{ID: "h1"}}}
	pick := promotedBySentinel(10)
	pick.Valkey.WritesFenced = true
	richer := replica(2, 20)
	richer.Valkey.PrimaryHost, richer.Valkey.LinkUp = "", false
	obs := obsAt(1, spec, unreachable(primary(0), 5), pick, richer)
	obs.Sentinels = sentinels(3, "10.0.0.2", 1)
	d := Decide(p, obs)
	if d.Transition != nil || d.Waiting.Kind != WaitSentinelPickLacksData {
		t.Fatalf("transition %+v, waiting %q (%v): want the wait on a pick that lacks data", d.Transition, d.Waiting, d.Waiting.Kind)
	}
	if got := actionsOf(d, "fence"); len(got) != 1 || got[0] != "fence s0-1" {
		t.Fatalf("fenced %v, want s0-1 closed to replicas too", got)
	}
	if got := actionsOf(d, "open-writes"); len(got) != 0 {
		t.Fatalf("%v while the pick lacks data", got)
	}
	// Once fenced whole, it is not fenced again.
	pick.Valkey.SyncFenced = true
	obs = obsAt(2, spec, unreachable(primary(0), 6), pick, richer)
	obs.Sentinels = sentinels(3, "10.0.0.2", 1)
	if d = Decide(p, obs); len(actionsOf(d, "fence")) != 0 || d.Waiting.Kind != WaitSentinelPickLacksData {
		t.Fatalf("actions %v, waiting %q", d.Actions, d.Waiting)
	}
}

// A sentinel re-created during a hand-over's wait monitors nothing: it is told the recorded
// primary there, as in Steady, or the hand-over, which needs every sentinel monitoring the
// group, would wait for ever (found by the exploration).
func TestSentinelModeHandOverTellsARecreatedSentinel(t *testing.T) {
	spec := sentinelSpec()
	spec.Switchover = &Switchover{Shard: 0, To: "s0-1"}
	obs := obsAt(1, spec, primary(10), openReplica(1, 10), openReplica(2, 10))
	obs.Sentinels = told(sentinels(0, "", 0))
	p := Decide(steadyState(), obs).Next
	if p.State != FailingOver || !p.Op.Election.Planned {
		t.Fatalf("want a planned FailingOver, got %s %+v", p.State, p.Op)
	}
	held := openReplica(2, 10)
	held.Valkey.HeldBack = true
	obs = obsAt(2, spec, primary(10), openReplica(1, 10), held)
	obs.Sentinels = told(sentinels(0, "", 0))
	obs.Sentinels[2] = Sentinel{Name: "sentinel-2", Reachable: true}
	d := Decide(p, obs)
	if got := actionsOf(d, "sentinel-monitor"); len(got) != 1 || !strings.HasPrefix(got[0], "sentinel-monitor sentinel-2 -> s0-0") {
		t.Fatalf("told %v, want sentinel-2 told s0-0", got)
	}
	if d.Waiting.Kind != WaitSentinelHandOver || len(actionsOf(d, "sentinel-hand-over")) != 0 {
		t.Fatalf("waiting %q, actions %v: the hand-over waits until it monitors", d.Waiting, d.Actions)
	}
}

// The hand-over is not sent while a sentinel last read the target as a primary (a node that
// was the primary, or restarted, within its INFO period): that sentinel would take the
// promoted target for a replica turned primary behind its back and point it at the old
// primary again (seen on real sentinels).
func TestSentinelModeHandOverWaitsForTheTargetReadAsAReplica(t *testing.T) {
	spec, p, held := handingOverToReplica1()
	obs := obsAt(1, spec, primary(10), openReplica(1, 10), held)
	obs.Sentinels = told(withReplicas(sentinels(0, "", 0), SentinelReplica{IP: "10.0.0.2", Priority: 100}, SentinelReplica{IP: "10.0.0.3", Priority: 0}))
	obs.Sentinels[2].Replicas = []SentinelReplica{{IP: "10.0.0.2", Priority: 100, ReportsPrimary: true}, {IP: "10.0.0.3", Priority: 0}}
	d := Decide(p, obs)
	if len(actionsOf(d, "sentinel-hand-over")) != 0 || d.Waiting.Kind != WaitSentinelHandOver || !strings.Contains(d.Waiting.String(), "sentinel-2 last read s0-1 as a primary") {
		t.Fatalf("actions %v, waiting %q: want the wait for sentinel-2 to read s0-1 as a replica", d.Actions, d.Waiting)
	}
	obs.Sentinels[2].Replicas[0].ReportsPrimary = false
	if got := actionsOf(Decide(p, obs), "sentinel-hand-over"); len(got) != 1 {
		t.Fatalf("hand-over %v once every sentinel reads s0-1 as a replica", got)
	}
}

// A target that restarted during the hand-over's wait comes back closed; once it is linked to
// the primary again it is opened there, as converge opens any replica, and the hand-over goes
// on (found by the exploration: it waited for ever).
func TestSentinelModeHandOverOpensARestartedTarget(t *testing.T) {
	spec, p, held := handingOverToReplica1()
	obs := obsAt(1, spec, primary(10), replica(1, 10), held)
	obs.Sentinels = told(sentinels(0, "", 0))
	d := Decide(p, obs)
	if got := actionsOf(d, "open-writes"); len(got) != 1 || got[0] != "open-writes s0-1" {
		t.Fatalf("opened %v, want s0-1", got)
	}
	if d.Waiting.Kind != WaitSentinelHandOver || len(actionsOf(d, "sentinel-hand-over")) != 0 {
		t.Fatalf("waiting %q, actions %v: the hand-over waits until it is open", d.Waiting, d.Actions)
	}
}

// handingOverToReplica1 is a requested switchover to s0-1 recorded (a planned FailingOver),
// with s0-2 held back.
func handingOverToReplica1() (Spec, Persisted, Node) {
	spec := sentinelSpec()
	spec.Switchover = &Switchover{Shard: 0, To: "s0-1"}
	held := openReplica(2, 10)
	held.Valkey.HeldBack = true
	p := steadyState()
	p.State = FailingOver
	p.Op = Operation{Election: Election{Shard: 0, Lost: "s0-0", LostRunID: "run-0", LostHistory: History{ID: "h1"}, Planned: true},
		Switchover: SwitchoverGoal{To: "s0-1"}, HandOver: HandOverMark{Shard: 0, To: "s0-1"}}
	return spec, p, held
}
