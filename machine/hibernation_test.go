package machine

import (
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
	if len(d.Actions) > 0 || !strings.Contains(d.Waiting, "s0-1 catching up with s0-0 (offset 100 of 120)") {
		t.Fatalf("want the pods kept while the replicas catch up, got %s", d)
	}
	r1.Valkey.Offset, r2.Valkey.Offset = 120, 120
	d = Decide(p, obsAt(7, spec, prim, r1, r2))
	if d.Transition == nil || d.Transition.Event != EventHibernateCaughtUp || d.Next.Op.WakeFrom != "s0-0" || !strings.Contains(d.Transition.Message, "shard 0 from s0-0") {
		t.Fatalf("want the node to wake from recorded once caught up, got %s (next %+v)", d, d.Next.Op)
	}
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "stopped") {
		t.Fatalf("want every pod stopped once caught up, got %s", d)
	}
	p = d.Next
	stopped := obsAt(8, spec)
	stopped.Objects.Replicas = StoppedReplicas
	d = Decide(p, stopped)
	if len(d.Actions) > 0 || d.Transition != nil || !strings.HasPrefix(d.Waiting, "hibernated: every pod stopped") {
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
	if !strings.Contains(d.Waiting, "the objects still ask for 4") && len(actionsOf(d, "ensure-objects")) == 0 {
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
	if d.Transition != nil || !strings.Contains(d.Waiting, "does not persist its data") {
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
	if d.Transition == nil || d.Transition.Event != EventWakeRequested || d.Next.State != Bootstrapping || !d.Next.Op.Wake || len(d.Next.Shards) != 0 {
		t.Fatalf("want wake-requested into Bootstrapping, got %s (next %+v)", d, d.Next)
	}
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "replicas=2") {
		t.Fatalf("want the StatefulSets back at 3 pods, got %s", d)
	}
	p = d.Next
	// Back from their append-only files: primaries of nothing, no history to compare, keys.
	back := func(ord int, keys int64) Node {
		n := node(ord, RolePrimary, "fresh"+string(rune('a'+ord)), 0)
		n.Valkey.Keys, n.Valkey.WritesFenced, n.Valkey.SyncFenced = keys, true, true
		return n
	}
	n0, n1 := back(0, 1000), back(1, 990)
	d = Decide(p, obsAt(6, spec, n0, n1))
	if d.Transition != nil || len(actionsOf(d, "promote")) > 0 || !strings.Contains(d.Waiting, "waking: shard 0: ordinal 2") {
		t.Fatalf("chooses before s0-2 answered: %s", d)
	}
	n2 := back(2, 1000)
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
	back := func(ord int, keys int64) Node {
		n := node(ord, RolePrimary, "fresh"+string(rune('a'+ord)), 0)
		n.Valkey.Keys, n.Valkey.WritesFenced, n.Valkey.SyncFenced = keys, true, true
		return n
	}
	wake := func(t *testing.T, wakeFrom string, n0, n1, n2 Node) Decision {
		t.Helper()
		p := steadyState()
		p.State, p.PodsPerShard = Hibernated, 3
		p.Op = Operation{WakeFrom: wakeFrom}
		stopped := obsAt(5, spec)
		stopped.Objects.Replicas = StoppedReplicas
		d := Decide(p, stopped)
		if d.Transition == nil || d.Transition.Event != EventWakeRequested || d.Next.Op.WakeFrom != wakeFrom {
			t.Fatalf("want wake-requested keeping the record %q, got %s (next %+v)", wakeFrom, d, d.Next.Op)
		}
		d = Decide(d.Next, obsAt(6, spec, n0, n1, n2))
		if d.Transition == nil || d.Transition.Event != EventBootstrapElected {
			t.Fatalf("want bootstrap-elected, got %s", d)
		}
		return d
	}
	t.Run("recorded", func(t *testing.T) {
		d := wake(t, "s0-0", back(0, 900), back(1, 1000), back(2, 900))
		if d.Next.Shards[0].Primary != "s0-0" || !strings.Contains(d.Transition.Message, "elected to wake from") {
			t.Fatalf("want the primary of the stop elected over a replica with more keys, got %s", d)
		}
	})
	t.Run("recorded-and-tied", func(t *testing.T) {
		d := wake(t, "s0-2", back(0, 1000), back(1, 1000), back(2, 1000))
		if d.Next.Shards[0].Primary != "s0-2" {
			t.Fatalf("want the primary of the stop elected over lower ordinals with as many keys, got %s", d)
		}
	})
	t.Run("not-recorded", func(t *testing.T) {
		d := wake(t, "-", back(0, 900), back(1, 1000), back(2, 900))
		if d.Next.Shards[0].Primary != "s0-1" {
			t.Fatalf("want the most complete node by key count without a record, got %s", d)
		}
	})
	t.Run("recorded-but-empty", func(t *testing.T) {
		d := wake(t, "s0-0", back(0, 0), back(1, 1000), back(2, 900))
		if d.Next.Shards[0].Primary != "s0-1" || !strings.Contains(d.Transition.Message, "s0-0, the primary when the pods stopped, holds no data now") {
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
	if d.Transition == nil || d.Transition.Event != EventHibernateCaughtUp || d.Next.Op.WakeFrom != "-" || !strings.Contains(d.Transition.Message, "no longer serves") {
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
	p.Op = Operation{WakeFrom: "s0-0"}
	prim := primary(120)
	prim.Valkey.WritesFenced = true
	if d := Decide(p, obsAt(6, spec, prim, replica(1, 120), replica(2, 120))); d.Transition != nil {
		t.Fatalf("the recorded primary still serves: nothing to record again, got %s", d)
	}
	restarted := node(0, RoleReplica, "fresh", 0)
	restarted.Valkey.RunID, restarted.Valkey.Keys = "run-0-again", 100
	d := Decide(p, obsAt(7, spec, restarted, replica(1, 120), replica(2, 120)))
	if d.Transition == nil || d.Transition.Event != EventHibernateCaughtUp || d.Next.Op.WakeFrom != "-" || !strings.Contains(d.Transition.Message, "restarted before it stopped") {
		t.Fatalf("want the record of s0-0 dropped, got %s (next %+v)", d, d.Next.Op)
	}
}
