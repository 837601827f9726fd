package machine

import (
	"fmt"
	"strings"
	"testing"
)

// TestHibernationClosesWritesLetsReplicasCatchUpThenStopsThePods walks a hibernation: the
// request is recorded first; the primary is closed to client writes; while a replica is behind
// the pods keep running; once it caught up, the StatefulSets ask for no pod. A fully stopped
// cluster is Hibernated, not Ready, neither progressing nor degraded.
func TestHibernationClosesWritesLetsReplicasCatchUpThenStopsThePods(t *testing.T) {
	spec := testSpec(2)
	spec.Persistence, spec.Hibernate = true, true
	p := steadyState()
	p.PodsPerShard = 3
	prim, r1, r2 := primary(100), replica(1, 100), replica(2, 100)
	d := Decide(p, obsAt(5, spec, prim, r1, r2))
	if d.Transition == nil || d.Transition.Event != EventHibernateRequested || d.Next.State != Hibernated {
		t.Fatalf("want hibernate-requested recorded first, got %s", d)
	}
	if got := actionsOf(d, "close-writes"); len(got) != 1 || got[0] != "close-writes s0-0" {
		t.Fatalf("want the primary closed to writes, got %s", d)
	}
	if len(actionsOf(d, "ensure-objects")) > 0 {
		t.Fatalf("stops the pods before writes are closed: %s", d)
	}
	p = d.Next
	prim.Valkey.WritesFenced, prim.Valkey.Offset = true, 120
	d = Decide(p, obsAt(6, spec, prim, r1, r2))
	if len(d.Actions) > 0 || (d.Waiting != Wait{Kind: WaitHibernateCatchUp, Shard: 0, Node: "s0-1", Peer: "s0-0", N: 100, Of: 120}) {
		t.Fatalf("want the pods kept while the replicas catch up, got %s", d)
	}
	r1.Valkey.Offset, r2.Valkey.Offset = 120, 120
	d = Decide(p, obsAt(7, spec, prim, r1, r2))
	if d.Transition == nil || d.Transition.Event != EventHibernateCaughtUp || d.Next.Op.Hibernation.From != "s0-0" || d.Transition.Why != (Reason{Kind: ReasonHibernateCaughtUp, WakeFrom: "s0-0", Primaries: "s0-0"}) {
		t.Fatalf("want the node to wake from recorded once caught up, got %s (next %+v)", d, d.Next.Op)
	}
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "stopped") {
		t.Fatalf("want every pod stopped once caught up, got %s", d)
	}
	p = d.Next
	stopped := obsAt(8, spec)
	stopped.Objects.Replicas = StoppedReplicas
	d = Decide(p, stopped)
	if len(d.Actions) > 0 || d.Transition != nil || d.Waiting.Kind != WaitHibernated {
		t.Fatalf("a stopped cluster: %s", d)
	}
	conds := map[string]Condition{}
	for _, c := range Observed(d.Next, stopped, d) {
		conds[c.Type] = c
	}
	if c := conds[ConditionReady]; c.Status != ConditionFalse || c.Reason != "Hibernated" {
		t.Errorf("Ready %+v", c)
	}
	if c := conds[ConditionProgressing]; c.Status != ConditionFalse || c.Reason != "Hibernated" {
		t.Errorf("Progressing %+v", c)
	}
	if c := conds[ConditionDegraded]; c.Status != ConditionFalse {
		t.Errorf("Degraded %+v", c)
	}
}

// TestACacheClusterDoesNotHibernate: without persistence a stop loses every key (the API
// refuses it; the machine refuses it too) and Steady says why.
// The spec was lowered to 2 pods during the bootstrap (or kept claims were started beyond it):
// the record says 2 pods per shard, the objects still ask for 4, and the primary may sit on
// ordinal 3. A hibernation now would wake only the spec's pods: it waits for the scale-down
// (found by the simulator, regressions/hibernated-before-the-scale-down.sched).
func TestHibernationWaitsForAScaleDownNotCarriedOut(t *testing.T) {
	spec := testSpec(1)
	spec.Persistence, spec.Hibernate = true, true
	p := steadyState()
	p.PodsPerShard = 2
	obs := obsAt(5, spec, primary(100), replica(1, 100), replica(2, 100), replica(3, 100))
	obs.Objects.Replicas = 3
	d := Decide(p, obs)
	if d.Transition != nil && d.Transition.Event == EventHibernateRequested {
		t.Fatalf("hibernated with the objects still asking for 4 pods: %s", d)
	}
	if (d.Waiting.Kind != WaitHibernate || !strings.Contains(d.Waiting.Detail, "the objects still ask for 4")) && len(actionsOf(d, "ensure-objects")) == 0 {
		t.Fatalf("neither the scale-down nor a wait naming it: %s waiting=%q", d, d.Waiting)
	}
	obs.Objects.Replicas = 1
	if d := Decide(p, obsAt(6, spec, primary(100), replica(1, 100))); d.Transition == nil || d.Transition.Event != EventHibernateRequested {
		t.Fatalf("once scaled down, the hibernation goes on: %s", d)
	}
}

func TestACacheClusterDoesNotHibernate(t *testing.T) {
	spec := testSpec(2)
	spec.Hibernate = true
	d := Decide(steadyState(), obsAt(5, spec, primary(100), replica(1, 100), replica(2, 100)))
	if d.Transition != nil || (d.Waiting.Kind != WaitHibernate || !strings.Contains(d.Waiting.Detail, "does not persist its data")) {
		t.Fatalf("a Cache cluster hibernates: %s", d)
	}
}

// TestAWakeWaitsForEveryKeptVolumeThenElectsTheMostComplete: woken, the cluster bootstraps;
// while one pod has not answered, no shard's first node is chosen even though another holds
// keys (the missing one may hold more); once all answer, the node with every key is elected.
func TestAWakeWaitsForEveryKeptVolumeThenElectsTheMostComplete(t *testing.T) {
	spec := testSpec(2)
	spec.Persistence = true
	p := steadyState()
	p.State, p.PodsPerShard = Hibernated, 3
	stopped := obsAt(5, spec)
	stopped.Objects.Replicas = StoppedReplicas
	d := Decide(p, stopped)
	if d.Transition == nil || d.Transition.Event != EventWakeRequested || d.Next.State != Bootstrapping || !d.Next.Op.Hibernation.Wake || len(d.Next.Shards) != 0 {
		t.Fatalf("want wake-requested into Bootstrapping, got %s (next %+v)", d, d.Next)
	}
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "replicas=2") {
		t.Fatalf("want the StatefulSets back at 3 pods, got %s", d)
	}
	p = d.Next
	n0, n1 := wokenFromFile(0, 1000), wokenFromFile(1, 990)
	d = Decide(p, obsAt(6, spec, n0, n1))
	if d.Transition != nil || len(actionsOf(d, "promote")) > 0 || (d.Waiting.Kind != WaitBootstrapElection || d.Waiting.Shard != 0 || !strings.Contains(d.Waiting.Detail, "ordinal 2")) {
		t.Fatalf("chooses before s0-2 answered: %s", d)
	}
	n2 := wokenFromFile(2, 1000)
	d = Decide(p, obsAt(7, spec, n0, n1, n2))
	if d.Transition == nil || d.Transition.Event != EventBootstrapElected || d.Next.Shards[0].Primary == "s0-1" {
		t.Fatalf("want a node with every key elected once all answer, got %s", d)
	}
}

// TestAWakeStartsFromThePrimaryOfTheStopEvenWhenAReplicaHoldsMoreKeys: key counts are no
// evidence of which copy is newest (a replica not linked at the stop may hold keys the primary
// deleted since; a user close-writes does not close may have written to the primary after the
// catch-up, overwriting keys). The wake starts each shard from the node recorded when the pods
// stopped; a shard whose primary did not serve then is elected by its nodes' data, and a
// recorded node that comes back empty (its volume lost) is not elected over nodes with data.
func TestAWakeStartsFromThePrimaryOfTheStopEvenWhenAReplicaHoldsMoreKeys(t *testing.T) {
	spec := testSpec(2)
	spec.Persistence = true
	wake := func(t *testing.T, wakeFrom string, n0, n1, n2 Node) Decision {
		t.Helper()
		p := steadyState()
		p.State, p.PodsPerShard = Hibernated, 3
		p.Op = Operation{Hibernation: Hibernation{From: wakeFrom}}
		stopped := obsAt(5, spec)
		stopped.Objects.Replicas = StoppedReplicas
		d := Decide(p, stopped)
		if d.Transition == nil || d.Transition.Event != EventWakeRequested || d.Next.Op.Hibernation.From != wakeFrom {
			t.Fatalf("want wake-requested keeping the record %q, got %s (next %+v)", wakeFrom, d, d.Next.Op)
		}
		d = Decide(d.Next, obsAt(6, spec, n0, n1, n2))
		if d.Transition == nil || d.Transition.Event != EventBootstrapElected {
			t.Fatalf("want bootstrap-elected, got %s", d)
		}
		return d
	}
	t.Run("recorded", func(t *testing.T) {
		d := wake(t, "s0-0", wokenFromFile(0, 900), wokenFromFile(1, 1000), wokenFromFile(2, 900))
		if d.Next.Shards[0].Primary != "s0-0" || d.Transition.Why.Kind != ReasonBootstrapWoken {
			t.Fatalf("want the primary of the stop elected over a replica with more keys, got %s", d)
		}
	})
	t.Run("recorded-and-tied", func(t *testing.T) {
		d := wake(t, "s0-2", wokenFromFile(0, 1000), wokenFromFile(1, 1000), wokenFromFile(2, 1000))
		if d.Next.Shards[0].Primary != "s0-2" {
			t.Fatalf("want the primary of the stop elected over lower ordinals with as many keys, got %s", d)
		}
	})
	t.Run("not-recorded", func(t *testing.T) {
		d := wake(t, "-", wokenFromFile(0, 900), wokenFromFile(1, 1000), wokenFromFile(2, 900))
		if d.Next.Shards[0].Primary != "s0-1" {
			t.Fatalf("want the most complete node by key count without a record, got %s", d)
		}
	})
	t.Run("recorded-but-empty", func(t *testing.T) {
		d := wake(t, "s0-0", wokenFromFile(0, 0), wokenFromFile(1, 1000), wokenFromFile(2, 900))
		if d.Next.Shards[0].Primary != "s0-1" || d.Transition.Why.Kind != ReasonBootstrapElected || d.Transition.Why.Empty != "s0-0" {
			t.Fatalf("want the node with data elected and the empty primary named, got %s", d)
		}
	})
}

// TestAPrimaryLostWhileHibernatingIsNotRecordedToWakeFrom: a primary that restarted before the
// pods were stopped may have lost its last second of writes (appendfsync everysec) that its
// replicas hold, so its shard is not recorded and the wake elects by the nodes' data.
func TestAPrimaryLostWhileHibernatingIsNotRecordedToWakeFrom(t *testing.T) {
	spec := testSpec(2)
	spec.Persistence, spec.Hibernate = true, true
	p := steadyState()
	p.State, p.PodsPerShard = Hibernated, 3
	restarted := node(0, RolePrimary, "restarted", 0)
	restarted.Valkey.RunID, restarted.Valkey.WritesFenced, restarted.Valkey.SyncFenced = "run-0-again", true, true
	d := Decide(p, obsAt(6, spec, restarted, replica(1, 100), replica(2, 100)))
	if d.Transition == nil || d.Transition.Event != EventHibernateCaughtUp || d.Next.Op.Hibernation.From != "-" || d.Transition.Why != (Reason{Kind: ReasonHibernateCaughtUp, WakeFrom: "-", Primaries: "s0-0"}) {
		t.Fatalf("want shard 0 recorded without a node to wake from, got %s (next %+v)", d, d.Next.Op)
	}
}

// TestARecordedNodeThatRestartsBeforeTheStopIsNoLongerWokenFrom: the record is made while the
// primary serves; if it is then seen as another process before its pod stopped (a crash, its
// container restarted), its append-only file may lack the last writes its replicas hold, so
// the record of that shard is dropped and the wake elects it by its nodes' data.
func TestARecordedNodeThatRestartsBeforeTheStopIsNoLongerWokenFrom(t *testing.T) {
	spec := testSpec(2)
	spec.Persistence, spec.Hibernate = true, true
	p := steadyState()
	p.State, p.PodsPerShard = Hibernated, 3
	p.Op = Operation{Hibernation: Hibernation{From: "s0-0"}}
	prim := primary(120)
	prim.Valkey.WritesFenced = true
	if d := Decide(p, obsAt(6, spec, prim, replica(1, 120), replica(2, 120))); d.Transition != nil {
		t.Fatalf("the recorded primary still serves: nothing to record again, got %s", d)
	}
	restarted := node(0, RoleReplica, "fresh", 0)
	restarted.Valkey.RunID, restarted.Valkey.Keys = "run-0-again", 100
	d := Decide(p, obsAt(7, spec, restarted, replica(1, 120), replica(2, 120)))
	if d.Transition == nil || d.Transition.Event != EventHibernateCaughtUp || d.Next.Op.Hibernation.From != "-" || d.Transition.Why != (Reason{Kind: ReasonWakeFromRestarted, WakeFrom: "-", WakeFromWas: "s0-0"}) {
		t.Fatalf("want the record of s0-0 dropped, got %s (next %+v)", d, d.Next.Op)
	}
}

// TestAWakeWithFewerPodsAskedStartsEveryClaimTheShardsRanOn: a spec lowered while the cluster
// sleeps does not leave a claim unstarted. The shard stopped with 4 pods; its primary had
// restarted empty before the stop, so the write its replicas acknowledged by WAIT is only on
// ordinals 2 and 3. The wake asks for the 4 pods, waits for every one, and elects among all;
// the scale-down to the spec's count comes once Steady.
func TestAWakeWithFewerPodsAskedStartsEveryClaimTheShardsRanOn(t *testing.T) {
	spec := testSpec(1) // lowered from 3 replicas while hibernated
	spec.Persistence = true
	p := steadyState()
	p.State, p.PodsPerShard = Hibernated, 4
	p.Op = Operation{Hibernation: Hibernation{From: "-"}}
	stopped := obsAt(5, spec)
	stopped.Objects.Replicas = StoppedReplicas
	d := Decide(p, stopped)
	if d.Transition == nil || d.Transition.Event != EventWakeRequested {
		t.Fatalf("want wake-requested, got %s", d)
	}
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "replicas=3") {
		t.Fatalf("want the StatefulSets back at the 4 pods the shard stopped with, got %s", d)
	}
	p = d.Next
	n0, n1 := wokenFromFile(0, 5), wokenFromFile(1, 5)
	d = Decide(p, obsAt(6, spec, n0, n1))
	if d.Transition != nil || d.Waiting.Kind != WaitBootstrapElection || !strings.Contains(d.Waiting.Detail, "ordinal 2, ordinal 3") {
		t.Fatalf("chooses before the claims beyond the spec answered: %s", d)
	}
	d = Decide(p, obsAt(7, spec, n0, n1, wokenFromFile(2, 6), wokenFromFile(3, 6)))
	if d.Transition == nil || d.Transition.Event != EventBootstrapElected || (d.Next.Shards[0].Primary != "s0-2" && d.Next.Shards[0].Primary != "s0-3") {
		t.Fatalf("want a node holding the acknowledged write elected, got %s", d)
	}
}

// TestAWakeWithFewerShardsAskedWiresEveryShardThatStopped: a shard count lowered while the
// cluster sleeps does not leave a shard's claims unstarted (their writes would go with them,
// its slots assigned to the others empty). The wake asks for the 3 shards that stopped and
// wires them as they were; the resharding to the spec's 2 comes from Steady.
func TestAWakeWithFewerShardsAskedWiresEveryShardThatStopped(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards, spec.Persistence = ModeCluster, 2, true // lowered from 3 while hibernated
	p := Persisted{State: Hibernated, Seq: 3, Since: at(0), PodsPerShard: 2, Op: Operation{Hibernation: Hibernation{From: "s0-0 s1-0 s2-0"}}}
	for s := 0; s < 3; s++ {
		p.Shards = append(p.Shards, ShardRecord{Primary: fmt.Sprintf("s%d-0", s), RunID: fmt.Sprintf("run-s%d-0", s), History: History{ID: fmt.Sprintf("h%d", s)}, Epoch: 1})
	}
	stopped := obsAt(5, spec)
	stopped.Objects.Shards, stopped.Objects.Replicas = 3, StoppedReplicas
	d := Decide(p, stopped)
	if d.Transition == nil || d.Transition.Event != EventWakeRequested {
		t.Fatalf("want wake-requested, got %s", d)
	}
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "shards=3") {
		t.Fatalf("want the StatefulSets of the 3 shards that stopped back, got %s", d)
	}
	// Back from their claims, empty, each shard wired with its slots of before (nodes.conf).
	nodes := wiredShards(3, false)
	obs := obsAt(6, spec, nodes...)
	obs.Objects.Shards = 3
	d = Decide(d.Next, obs)
	if d.Transition == nil || d.Transition.To != Steady || len(d.Next.Shards) != 3 || d.Next.Shards[2].Primary != "s2-0" {
		t.Fatalf("want the 3 shards wired as they stopped, got %s (next %+v)", d, d.Next.Shards)
	}
}

// wokenFromFile is a pod woken on its kept claim, back from its append-only file: a primary of
// nothing, fenced, with no history to compare and its keys.
func wokenFromFile(ord int, keys int64) Node {
	n := node(ord, RolePrimary, "fresh"+string(rune('a'+ord)), 0)
	n.Valkey.Keys, n.Valkey.WritesFenced, n.Valkey.SyncFenced = keys, true, true
	return n
}
