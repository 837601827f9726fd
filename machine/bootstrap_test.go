package machine

import (
	"fmt"
	"strings"
	"testing"
)

// Bootstrap over volumes kept from a deleted cluster: the first node is elected by its data,
// never taken by ordinal, and the machine waits rather than guess.

// restarted is a node started from a kept Durable volume (fromAppendOnlyFile) whose claim is
// older than the cluster.
func restarted(ord int, keys int64) Node {
	n := fromAppendOnlyFile(ord, keys)
	n.Pod.VolumeFromBefore = true
	return n
}

func TestBootstrapWaitsForEveryNodeWithAnOldVolume(t *testing.T) {
	empty := node(0, RoleReplica, "fresh-0", 0) // its claim was lost: a new, empty volume
	d := Decide(Persisted{}, obsAt(1, durableSpec(2), empty, restarted(1, 877), unreachable(restarted(2, 0), 1)))
	if d.Transition != nil || len(actionsOf(d, "promote")) > 0 || len(actionsOf(d, "replica-of")) > 0 {
		t.Fatalf("promoted or re-pointed before s0-2, which kept an old volume, answered: %+v %v", d.Transition, d.Actions)
	}
	if w := d.Waiting; w.Kind != WaitBootstrapElection || w.Shard != 0 || !strings.Contains(w.Detail, "s0-2") {
		t.Fatalf("the wait does not name the node and the way out: %q", d.Waiting)
	}
}

func TestBootstrapElectsTheNodeWithTheMostDataNotTheLowestOrdinal(t *testing.T) {
	empty := node(0, RoleReplica, "fresh-0", 0)
	obs := obsAt(1, durableSpec(2), empty, restarted(1, 877), restarted(2, 870))
	d := Decide(Persisted{}, obs)
	if d.Transition == nil || d.Transition.Event != EventBootstrapElected {
		t.Fatalf("no election: %+v waiting=%q", d.Transition, d.Waiting)
	}
	if got := d.Next.Shards[0].Primary; got != "s0-1" {
		t.Fatalf("elected %s, want s0-1 (877 keys)", got)
	}
	if want := (Reason{Kind: ReasonBootstrapElected, Node: "s0-1", Keys: 877, Others: "s0-0 empty, s0-2 870 keys", OverByKeys: "s0-2"}); d.Transition.Why != want {
		t.Errorf("reason %+v, want %+v", d.Transition.Why, want)
	}
	if got := actionsOf(d, "promote"); len(got) != 1 || got[0] != "promote s0-1" {
		t.Fatalf("promotes %v, want s0-1", got)
	}
	// The others follow the elected node, the empty one and the one with fewer keys alike.
	if got := actionsOf(d, "replica-of"); len(got) != 2 {
		t.Fatalf("re-points %v, want s0-0 and s0-2 to follow s0-1", got)
	}
	// Wired to it, bootstrap-complete records it with the election's epoch.
	p := d.Next
	prim := node(1, RolePrimary, "new", 5)
	prim.Valkey.ReplID2, prim.Valkey.SecondOffset, prim.Valkey.Keys = "fresh-b", 1, 877
	prim.Valkey.RunID = restarted(1, 877).Valkey.RunID // the elected process
	r0, r2 := node(0, RoleReplica, "new", 5), node(2, RoleReplica, "new", 5)
	for _, r := range []*Node{&r0, &r2} {
		r.Valkey.PrimaryHost, r.Valkey.LinkUp, r.Valkey.Keys = prim.Pod.IP, true, 877
	}
	r2.Pod.VolumeFromBefore = true
	d = Decide(p, obsAt(2, durableSpec(2), r0, prim, r2))
	if d.Transition == nil || d.Transition.Event != EventBootstrapComplete || d.Next.Shards[0].Primary != "s0-1" || d.Next.Shards[0].Epoch != 1 {
		t.Fatalf("bootstrap did not complete on s0-1: %+v %+v", d.Transition, d.Next.Shards)
	}
}

func TestBootstrapWithoutDataTakesTheLowestOrdinal(t *testing.T) {
	d := Decide(Persisted{}, obsAt(1, durableSpec(2), node(0, RoleReplica, "a", 0), node(1, RoleReplica, "b", 0), node(2, RoleReplica, "c", 0)))
	if d.Transition != nil {
		t.Fatalf("a fresh cluster recorded %+v", d.Transition)
	}
	if got := actionsOf(d, "promote"); len(got) != 1 || got[0] != "promote s0-0" {
		t.Fatalf("promotes %v, want s0-0", got)
	}
}

func TestBootstrapWaitsWhenTheNodesHistoriesForked(t *testing.T) {
	// Two nodes restarted from RDB files name their histories: unrelated ones, both written.
	a, b := node(0, RoleReplica, "left", 100), node(1, RoleReplica, "right", 90)
	a.Valkey.Keys, b.Valkey.Keys = 10, 12
	d := Decide(Persisted{}, obsAt(1, durableSpec(1), a, b))
	if d.Transition != nil || len(actionsOf(d, "promote")) > 0 {
		t.Fatalf("chose between forked histories: %+v %v", d.Transition, d.Actions)
	}
	if w := d.Waiting; w.Kind != WaitDataChoice || w.Shard != 0 {
		t.Fatalf("waiting %q does not say the data forked and how to go on", d.Waiting)
	}
	// The user names the pod whose data wins: recorded, with what is discarded.
	spec := durableSpec(1)
	spec.BootstrapFrom = "s0-1"
	d = Decide(Persisted{}, obsAt(2, spec, a, b))
	if d.Transition == nil || d.Transition.Event != EventBootstrapElected || d.Next.Shards[0].Primary != "s0-1" {
		t.Fatalf("the user's choice was not recorded: %+v", d.Transition)
	}
	if want := (Reason{Kind: ReasonBootstrapChosen, Node: "s0-1", Keys: 12, Others: "s0-0 10 keys"}); d.Transition.Why != want {
		t.Fatalf("reason %+v, want %+v", d.Transition.Why, want)
	}
}

func TestBootstrapComparesNodesThatNameTheirHistoryByOffset(t *testing.T) {
	// Restarted from RDB files: the same history, one further along. The node with fewer
	// keys but a higher offset holds more (a key was overwritten and one deleted).
	a, b := node(0, RoleReplica, "h", 100), node(1, RoleReplica, "h", 120)
	a.Valkey.Keys, b.Valkey.Keys = 12, 11
	d := Decide(Persisted{}, obsAt(1, testSpec(1), a, b))
	if d.Transition == nil || d.Next.Shards[0].Primary != "s0-1" {
		t.Fatalf("elected %+v, want s0-1 (offset 120 contains offset 100)", d.Next.Shards)
	}
	if why := d.Transition.Why; why.Kind != ReasonBootstrapElected || why.OverByKeys != "" {
		t.Fatalf("an election by offset says it rested on key counts: %+v", why)
	}
}

func TestBootstrapElectsAgainWhenTheElectedProcessIsGone(t *testing.T) {
	obs := obsAt(1, durableSpec(1), restarted(0, 5), restarted(1, 9))
	d := Decide(Persisted{}, obs)
	if d.Next.Shards[0].Primary != "s0-1" {
		t.Fatalf("elected %+v", d.Next.Shards)
	}
	again := restarted(1, 9)
	again.Valkey.RunID = "run-1b"
	d = Decide(d.Next, obsAt(2, durableSpec(1), restarted(0, 5), again))
	if d.Transition == nil || d.Transition.Event != EventBootstrapElected || d.Next.Shards[0].RunID != "run-1b" || d.Transition.Why.Kind != ReasonBootstrapElected || d.Transition.Why.Instead != "s0-1" {
		t.Fatalf("no re-election of the restarted node: %+v", d.Transition)
	}
	if d.Next.Shards[0].Epoch != 2 {
		t.Fatalf("epoch %d, want 2", d.Next.Shards[0].Epoch)
	}
}

func TestBootstrapFromAPodThatDoesNotExistSaysSo(t *testing.T) {
	a, b := node(0, RoleReplica, "left", 100), node(1, RoleReplica, "right", 90)
	a.Valkey.Keys, b.Valkey.Keys = 10, 12
	spec := durableSpec(1)
	spec.BootstrapFrom = "s0-7"
	d := Decide(Persisted{}, obsAt(1, spec, a, b))
	if d.Transition != nil || len(actionsOf(d, "promote")) > 0 || (d.Waiting.Kind != WaitBootstrapElection || !strings.Contains(d.Waiting.Detail, "s0-7, which is not a pod")) {
		t.Fatalf("a bootstrap-from naming no pod: %+v %v waiting=%q", d.Transition, d.Actions, d.Waiting)
	}
}

// TestClusterBootstrapReadsSlotsFromTheShardsPrimaryNotOrdinalZero: a cluster-mode shard whose
// first node is ordinal 1 (ordinal 0 did not answer when the choice was made). Only a primary
// lists slots as its own, so ordinal 0, now its replica, reports none; the machine must read the
// shard's slots from the primary and go on to the next shard's, not assign them again (found on
// real Valkey: assign-slots of shard 1 repeated forever, and shard 2 never got its slots).
func TestClusterBootstrapReadsSlotsFromTheShardsPrimaryNotOrdinalZero(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 3
	plan := SlotPlan(3)
	shard := func(s, firstOrd int) []Node {
		first := node(firstOrd, RolePrimary, fmt.Sprintf("h%d", s), 14)
		r := node(1-firstOrd, RoleReplica, fmt.Sprintf("h%d", s), 14)
		for _, n := range []*Node{&first, &r} {
			n.Name, n.Shard = fmt.Sprintf("s%d-%d", s, n.Ordinal), s
			n.Pod.IP = fmt.Sprintf("10.0.%d.%d", s, n.Ordinal+1)
			n.Valkey.RunID = "run-" + n.Name
			n.Valkey.Joined, n.Valkey.SlotsSeen, n.Valkey.ClusterOK = true, NumSlots, true
		}
		first.Valkey.SyncFenced = false
		first.Valkey.WritesFenced = true // client writes open only when the bootstrap completes
		first.Valkey.Slots = []SlotRange{plan[s]}
		r.Valkey.PrimaryHost, r.Valkey.LinkUp = first.Pod.IP, true
		return []Node{r, first}
	}
	third := shard(2, 0)
	third[1].Valkey.Slots = nil // shard 2's primary has no slots yet
	nodes := append(append(shard(0, 0), shard(1, 1)...), third...)
	d := Decide(Persisted{State: Bootstrapping, Seq: 1, Since: at(0)}, obsAt(1, spec, nodes...))
	want := fmt.Sprintf("assign-slots s2-0 [%v]", plan[2])
	if got := actionsOf(d, "assign-slots"); len(got) != 1 || got[0] != want {
		t.Fatalf("assigns %v, want only %s: shards 0 and 1 serve their planned slots", got, want)
	}
	// Once shard 2 serves its slots, and gossip has told every node, the bootstrap completes
	// with s1-1 recorded for shard 1.
	third[1].Valkey.Slots = []SlotRange{plan[2]}
	nodes = append(append(shard(0, 0), shard(1, 1)...), third...)
	nodes[0].Valkey.SlotsSeen = plan[2].Start
	d = Decide(Persisted{State: Bootstrapping, Seq: 1, Since: at(0)}, obsAt(2, spec, nodes...))
	if d.Transition != nil || (d.Waiting.Kind != WaitSlotMapBehind || !strings.Contains(d.Waiting.Detail, "s0-1 (sees 10922 of 16384 slots)")) {
		t.Fatalf("completed, or waits without naming s0-1, before gossip told it shard 2's slots: %+v waiting=%q", d.Transition, d.Waiting)
	}
	nodes[0].Valkey.SlotsSeen = NumSlots
	d = Decide(Persisted{State: Bootstrapping, Seq: 1, Since: at(0)}, obsAt(3, spec, nodes...))
	if d.Transition == nil || d.Transition.To != Steady || d.Next.Shards[1].Primary != "s1-1" {
		t.Fatalf("bootstrap not complete with s1-1 recorded: %+v waiting=%q actions=%v", d.Transition, d.Waiting, d.Actions)
	}
}

// A Cache-profile cluster re-created on its kept claims comes back from nodes.conf empty: a
// node that served its shard's slots before still serves them, and Valkey refuses to make it a
// replica (CLUSTER REPLICATE: the node must be without assigned slots). The bootstrap's free
// choice must be that node, not the lowest ordinal: the old choice asked for replica-of s0-1 ->
// s0-0 forever (found by the simulator once it modelled nodes.conf).
func TestClusterBootstrapChoosesTheNodeThatServesTheShardsSlots(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 1
	fresh := node(0, RolePrimary, "h-fresh", 0)
	owner := node(1, RolePrimary, "h-owner", 0)
	fresh.Valkey.WritesFenced, owner.Valkey.WritesFenced = true, true // as every process starts
	owner.Valkey.Slots = []SlotRange{{Start: 0, End: NumSlots - 1}}
	d := Decide(Persisted{State: Bootstrapping, Seq: 1, Since: at(0)}, obsAt(1, spec, fresh, owner))
	if got := actionsOf(d, "replica-of"); len(got) != 1 || !strings.HasPrefix(got[0], "replica-of s0-0 -> s0-1") {
		t.Fatalf("replica-of %v, want s0-0 to follow s0-1, which serves the shard's slots (waiting %q)", got, d.Waiting)
	}
	if got := actionsOf(d, "assign-slots"); len(got) != 0 {
		t.Fatalf("assigns %v: s0-1 serves every slot already", got)
	}
}

// Two nodes of the shard serve slots from their kept nodes.conf (a re-creation after a
// takeover, with fewer shards: their claims cover different parts). The bootstrap wires the
// shard to one of them; the other cannot be made a replica while it serves slots (CLUSTER
// REPLICATE refuses it), and asking for good kept the bootstrap from ever ending (found by the
// simulator: regressions/cluster-bootstrap-stray-serves-slots.sched). It is settled as a stray:
// empty, its slots move to the shard's first node within the shard.
func TestClusterBootstrapSettlesASecondSlotServerAsAStray(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 1
	first := node(0, RolePrimary, "h-a", 0)
	first.Valkey.Slots = []SlotRange{{Start: 0, End: 8191}}
	stray := node(1, RolePrimary, "h-b", 0)
	stray.Valkey.Slots = []SlotRange{{Start: 8192, End: NumSlots - 1}}
	first.Valkey.WritesFenced, stray.Valkey.WritesFenced = true, true // as every process starts
	first.Valkey.ConfigEpoch, stray.Valkey.ConfigEpoch = 1, 2
	d := Decide(Persisted{State: Bootstrapping, Seq: 1, Since: at(0)}, obsAt(1, spec, first, stray))
	if got := actionsOf(d, "replica-of"); len(got) != 0 {
		t.Fatalf("replica-of %v for a node that serves slots (waiting %q)", got, d.Waiting)
	}
	if got := actionsOf(d, "migrate-slots"); len(got) != 1 || got[0] != "migrate-slots 8192-16383 shard 0 (s0-1) -> shard 0 (s0-0)" {
		t.Fatalf("migrate-slots %v, want the empty stray's slots moved to s0-0 (waiting %q)", got, d.Waiting)
	}
}

// A cluster re-created smaller than the one deleted: the claims of ordinals 2 and 3 were kept
// and may hold the newest data. The first bootstrap starts their pods, elects among all, says
// why ordinals beyond the spec run, and once Steady the scale-down hands over first
// (sim/testdata/regressions/recreate-past-claims-beyond-the-spec.sched plays it through).
func TestAFirstBootstrapStartsTheClaimsKeptBeyondTheSpec(t *testing.T) {
	spec := durableSpec(1)
	beyond := []Claim{{Name: "s0-2", Shard: 0, Ordinal: 2}, {Name: "s0-3", Shard: 0, Ordinal: 3}}
	obs := Observation{Time: at(1), Spec: spec, ClaimsBeyond: beyond}
	d := Decide(Persisted{}, obs)
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "replicas=3") {
		t.Fatalf("ensure-objects %v, want replicas=3 to start the kept claims of ordinals 2-3", got)
	}

	// Without persistence a claim holds no data to wait for; a wake is not a first bootstrap.
	cache := obs
	cache.Spec.Persistence = false
	if got := actionsOf(Decide(Persisted{}, cache), "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "replicas=1") {
		t.Errorf("without persistence: ensure-objects %v, want replicas=1", got)
	}
	wake := Persisted{State: Bootstrapping, Op: Operation{Hibernation: Hibernation{Wake: true}}}
	if got := actionsOf(Decide(wake, obs), "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "replicas=1") {
		t.Errorf("a wake: ensure-objects %v, want replicas=1", got)
	}

	// Pods 0 and 1 answer with data, 2 and 3 do not exist yet (a quota, a slow informer): no
	// election passes over their claims.
	early := obsAt(2, spec, restarted(0, 3), restarted(1, 4))
	early.Objects.Replicas, early.ClaimsBeyond = 3, beyond
	if d := Decide(Persisted{}, early); d.Transition != nil || (d.Waiting.Kind != WaitBootstrapElection || !strings.Contains(d.Waiting.Detail, "the claims of s0-2, s0-3, beyond the spec")) {
		t.Fatalf("elected before the claims beyond the spec had pods: %s waiting=%q", d, d.Waiting)
	}
	// The user names the pod whose data wins: the pods beyond are not waited for, nor kept.
	early.Spec.BootstrapFrom = "s0-1"
	d = Decide(Persisted{}, early)
	if d.Transition == nil || d.Transition.Event != EventBootstrapElected || d.Next.Shards[0].Primary != "s0-1" {
		t.Fatalf("bootstrap-from s0-1 did not elect it: %s waiting=%q", d, d.Waiting)
	}
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "replicas=1") {
		t.Fatalf("with bootstrap-from: ensure-objects %v, want the spec's replicas=1", got)
	}

	// The pods run: the one holding the most is elected, though beyond the spec.
	obs = obsAt(2, spec, node(0, RoleReplica, "fresh-0", 0), restarted(1, 0), restarted(2, 5), restarted(3, 4))
	obs.Objects.Replicas = 3
	d = Decide(Persisted{}, obs)
	if d.Transition == nil || d.Transition.Event != EventBootstrapElected || d.Next.Shards[0].Primary != "s0-2" {
		t.Fatalf("want s0-2 (5 keys) elected: %+v waiting=%q", d.Transition, d.Waiting)
	}
	if got := actionsOf(d, "ensure-objects"); len(got) != 0 {
		t.Fatalf("the objects shrink before the shard is wired: %v", got)
	}

	// Wired: bootstrap-complete says why four pods run; Steady then hands over before the
	// scale-down to the spec's two.
	p := d.Next
	prim := node(2, RolePrimary, "new", 5)
	prim.Valkey.RunID, prim.Valkey.Keys = restarted(2, 5).Valkey.RunID, 5
	nodes := []Node{node(0, RoleReplica, "new", 5), node(1, RoleReplica, "new", 5), prim, node(3, RoleReplica, "new", 5)}
	for i := range nodes {
		if i != 2 {
			nodes[i].Valkey.PrimaryHost, nodes[i].Valkey.LinkUp, nodes[i].Valkey.Keys = prim.Pod.IP, true, 5
		}
		nodes[i].Pod.VolumeFromBefore = i >= 1
	}
	obs = obsAt(3, spec, nodes...)
	obs.Objects.Replicas = 3
	d = Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventBootstrapComplete || d.Transition.Why != (Reason{Kind: ReasonWired, Shards: 1, SpecShards: 1, Pods: 2, PodsKept: 4, Kept: KeptVolumes}) {
		t.Fatalf("bootstrap-complete does not say why ordinals 2-3 run: %+v waiting=%q", d.Transition, d.Waiting)
	}
	if d.Next.PodsPerShard != 2 {
		t.Fatalf("records %d pods per shard, want the spec's 2", d.Next.PodsPerShard)
	}
}

// A bootstrap gave shard 0's first node, s0-0 (chosen freely, nothing recorded), slots with
// their keys on the way to the slot plan, and s0-0 restarts: while it does not answer, s0-1's
// view shows its ID serving them. A free choice of s0-1 would promote it (a takeover), and
// s0-0, back, would follow it and sync the keys away. The choice waits for s0-0; once every
// pod answers and none has that ID, it is a ghost and the choice is made.
func TestClusterBootstrapWaitsForAFirstNodeThatServesSlots(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 1
	other := node(1, RolePrimary, "h-b", 0)
	other.Valkey.WritesFenced, other.Valkey.NodeID = true, "id-b"
	other.Valkey.Known = []KnownNode{{ID: "id-a", IP: "10.0.0.1", Slots: 100, Ranges: []SlotRange{{Start: 0, End: 99}}}}
	silent := unreachable(node(0, RolePrimary, "h-a", 0), 1)
	d := Decide(Persisted{State: Bootstrapping, Seq: 1, Since: at(0)}, obsAt(1, spec, silent, other))
	if got := append(actionsOf(d, "promote"), actionsOf(d, "replica-of")...); len(got) != 0 {
		t.Fatalf("%v while s0-0, which may serve the moved slots, does not answer", got)
	}
	if !strings.Contains(d.Waiting.String(), "s0-0 do(es) not answer yet, and slots are served by a node no answering pod is") {
		t.Fatalf("waiting %q, want the silent first node named", d.Waiting)
	}

	// Every pod answers and none is id-a: a ghost, the free choice goes on.
	back := node(0, RolePrimary, "h-a2", 0)
	back.Valkey.WritesFenced, back.Valkey.NodeID = true, "id-c"
	d = Decide(Persisted{State: Bootstrapping, Seq: 1, Since: at(0)}, obsAt(2, spec, back, other))
	if got := actionsOf(d, "replica-of"); len(got) != 1 || !strings.HasPrefix(got[0], "replica-of s0-1 -> s0-0") {
		t.Fatalf("replica-of %v, want the free choice of s0-0 once every pod answers (decided %s)", got, d)
	}
}
