package machine

import (
	"strings"
	"testing"
)

// steadyWithAShardBeyond is a Steady cluster of two shards whose objects still run a third
// (a shard beyond the records): its pods serve no slot and hold no key, and every node knows
// every other.
func steadyWithAShardBeyond() (Persisted, Observation) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 2
	plan := SlotPlan(2)
	nodes := withIDs(append(append(clusterShard(0, plan[0]), clusterShard(1, plan[1])...), clusterShard(2)...))
	p := reshardingTo(0, 2)
	p.State, p.Op = Steady, Operation{}
	obs := obsAt(1, spec, nodes...)
	obs.Objects.Shards = 3
	return p, obs
}

// A shard beyond the records whose pods are still on the cluster bus keeps its objects until
// they have left it: the scale-down's check refuses to delete a pod still in the cluster, so
// deciding the shrink would be refused on every turn.
func TestAShardLeavesTheBusBeforeItsObjectsGo(t *testing.T) {
	p, obs := steadyWithAShardBeyond()
	d := Decide(p, obs)
	if got := actionsOf(d, "ensure-objects"); len(got) > 0 {
		t.Fatalf("decides %v while shard 2's pods are on the bus", got)
	}
	if got := actionsOf(d, "remove-node"); len(got) != 2 || !strings.Contains(got[0], "s2-0") || !strings.Contains(got[1], "s2-1") {
		t.Fatalf("remove-node %v, want s2-0 and s2-1 (actions %v)", got, d.Actions)
	}

	// One of them holds keys: it is waited for, with the reason, and the objects stay.
	_, obs = steadyWithAShardBeyond()
	obs.Nodes[4].Valkey.Keys = 7
	d = Decide(p, obs)
	if got := actionsOf(d, "ensure-objects"); len(got) > 0 {
		t.Fatalf("decides %v while s2-0 holds keys", got)
	}
	if (d.Waiting != Wait{Kind: WaitLeavingNodeHoldsKeys, Shard: 2, Node: "s2-0", N: 7}) {
		t.Fatalf("waiting %q, want it to name s2-0's keys", d.Waiting)
	}

	// Both have left the bus: now the objects shrink.
	_, obs = steadyWithAShardBeyond()
	for i := 4; i < 6; i++ {
		obs.Nodes[i].Valkey.Joined, obs.Nodes[i].Valkey.Known = false, nil
	}
	d = Decide(p, obs)
	if got := actionsOf(d, "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "shards=2") {
		t.Fatalf("ensure-objects %v, want shards=2 once shard 2 left the bus (actions %v, waiting %q)", got, d.Actions, d.Waiting)
	}
}
