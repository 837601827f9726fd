package machine

import (
	"fmt"
	"strings"
	"testing"
)

// TestAFirstBootstrapStartsTheShardsKeptBeyondTheSpec: a Cluster re-created with 2 shards on
// the claims of 3. The claims of shard 2 hold its keys, so the first bootstrap asks for 3
// shards, keeps asking once their pods run (the claims are then no longer "beyond": the pods
// on them tell), and wires all three; the resharding to the spec's 2 comes from Steady
// (sim/testdata/regressions/cluster-persistent-recreated-with-fewer-shards-drops-a-shard.sched
// plays it through).
func TestAFirstBootstrapStartsTheShardsKeptBeyondTheSpec(t *testing.T) {
	spec := durableSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 2
	var kept []Claim
	for s := 0; s < 3; s++ {
		for o := 0; o < 2; o++ {
			kept = append(kept, Claim{Name: fmt.Sprintf("s%d-%d", s, o), Shard: s, Ordinal: o})
		}
	}
	fresh := Observation{Time: at(1), Spec: spec, ClaimsBeyond: kept}
	if got := actionsOf(Decide(Persisted{}, fresh), "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "shards=3") {
		t.Fatalf("ensure-objects %v, want shards=3 to start the kept claims of shard 2", got)
	}
	// Without persistence the claims hold no keys (nodes.conf only): the spec's shards.
	cache := fresh
	cache.Spec.Persistence = false
	if got := actionsOf(Decide(Persisted{}, cache), "ensure-objects"); len(got) != 1 || !strings.Contains(got[0], "shards=2") {
		t.Errorf("without persistence: ensure-objects %v, want shards=2", got)
	}

	// The pods run on their kept claims, each shard as it was (nodes.conf): wired, all three.
	nodes := wiredShards(3, true)
	obs := obsAt(2, spec, nodes...)
	obs.Objects.Shards = 3
	d := Decide(Persisted{State: Bootstrapping, Seq: 1, Since: at(0)}, obs)
	if d.Transition == nil || d.Transition.To != Steady || len(d.Next.Shards) != 3 || d.Next.Shards[2].Primary != "s2-0" {
		t.Fatalf("want the 3 kept shards wired, got %s (next %+v, waiting %q)", d, d.Next.Shards, d.Waiting)
	}
	if want := (Reason{Kind: ReasonWired, Shards: 3, SpecShards: 2, Pods: 2}); d.Transition.Why != want {
		t.Errorf("bootstrap-complete says %+v, want %+v: why shard 2 runs", d.Transition.Why, want)
	}
}

// wiredShards is shards shards of a primary (fenced for client writes) and its linked
// replica, each back on its claims as nodes.conf had them: on the bus, serving its slots of
// SlotPlan(shards). fromBefore marks the volumes as older than the cluster (a re-creation).
func wiredShards(shards int, fromBefore bool) []Node {
	plan := SlotPlan(shards)
	var nodes []Node
	for s := 0; s < shards; s++ {
		first, r := node(0, RolePrimary, fmt.Sprintf("h%d", s), 0), node(1, RoleReplica, fmt.Sprintf("h%d", s), 0)
		for _, n := range []*Node{&first, &r} {
			n.Name, n.Shard = fmt.Sprintf("s%d-%d", s, n.Ordinal), s
			n.Pod.IP = fmt.Sprintf("10.0.%d.%d", s, n.Ordinal+1)
			n.Pod.VolumeFromBefore = fromBefore
			n.Valkey.RunID = "run-" + n.Name
			n.Valkey.Joined, n.Valkey.SlotsSeen, n.Valkey.ClusterOK = true, NumSlots, true
		}
		first.Valkey.SyncFenced, first.Valkey.WritesFenced = false, true
		first.Valkey.Slots = []SlotRange{plan[s]}
		r.Valkey.PrimaryHost, r.Valkey.LinkUp = first.Pod.IP, true
		nodes = append(nodes, first, r)
	}
	return nodes
}
