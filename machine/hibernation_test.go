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
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "stopped") {
		t.Fatalf("want every pod stopped once caught up, got %s", d)
	}
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
