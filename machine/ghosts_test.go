package machine

import (
	"strings"
	"testing"
)

// withIDs gives every node a cluster ID and the others' (at their IPs, with their slots) in its
// view, as a cluster whose nodes all know each other reports it.
func withIDs(nodes []Node) []Node {
	for i := range nodes {
		nodes[i].Valkey.NodeID = "id-" + nodes[i].Name
	}
	for i := range nodes {
		for j, o := range nodes {
			if i != j {
				nodes[i].Valkey.Known = append(nodes[i].Valkey.Known, KnownNode{ID: o.Valkey.NodeID, IP: o.Pod.IP, Slots: SlotCount(o.Valkey.Slots)})
			}
		}
	}
	return nodes
}

func steadyShards3(nodes []Node) (Persisted, Observation) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 3
	steady := reshardingTo(0, 3)
	steady.State, steady.Op = Steady, Operation{}
	return steady, obsAt(1, spec, nodes...)
}

func threeShards() []Node {
	plan := SlotPlan(3)
	return withIDs(append(append(clusterShard(0, plan[0]), clusterShard(1, plan[1])...), clusterShard(2, plan[2])...))
}

// TestAGhostWithoutSlotsIsForgotten: s1-1 came back on an empty volume as a new node; its old ID
// stays in the others' views, without slots (it was a replica). Every pod answers with its ID:
// the machine asks every node to forget the old one, and nothing else.
func TestAGhostWithoutSlotsIsForgotten(t *testing.T) {
	nodes := threeShards()
	for i := range nodes {
		if nodes[i].Name != "s1-1" {
			nodes[i].Valkey.Known = append(nodes[i].Valkey.Known, KnownNode{ID: "old-s1-1", IP: "10.9.9.9"})
		}
	}
	p, obs := steadyShards3(nodes)
	d := Decide(p, obs)
	if got := actionsOf(d, "forget-node"); len(got) != 1 || got[0] != "forget-node old-s1-1 (10.9.9.9)" {
		t.Fatalf("forget-node %v, want the old ID of s1-1 (actions %v, waiting %q)", got, d.Actions, d.Waiting)
	}
	if d.Transition != nil || len(d.Actions) != 1 {
		t.Fatalf("transition %+v, actions %v: want forget-node alone", d.Transition, d.Actions)
	}
}

// TestAGhostIsNotForgottenWhileAPodIsUnheard: the same ghost, but s2-1 does not answer: it
// could be that very node (its pod just re-created on a kept volume, say), so nothing is
// forgotten.
func TestAGhostIsNotForgottenWhileAPodIsUnheard(t *testing.T) {
	nodes := threeShards()
	for i := range nodes {
		nodes[i].Valkey.Known = append(nodes[i].Valkey.Known, KnownNode{ID: "old-node", IP: "10.9.9.9"})
	}
	nodes[5].Reachable, nodes[5].Valkey = false, Valkey{}
	p, obs := steadyShards3(nodes)
	if got := actionsOf(Decide(p, obs), "forget-node"); len(got) != 0 {
		t.Fatalf("forget-node %v while s2-1 is unheard", got)
	}
}

// TestAGhostServingSlotsIsNotForgotten: the old ID still serves shard 1's slots in two views
// (the takeover has not reached them): forgetting it would leave those slots served by nobody
// in those views. The machine waits and names it.
func TestAGhostServingSlotsIsNotForgotten(t *testing.T) {
	nodes := threeShards()
	for i := range nodes[:2] {
		nodes[i].Valkey.Known = append(nodes[i].Valkey.Known, KnownNode{ID: "old-s1-0", IP: "10.9.9.8", Slots: 5461})
	}
	p, obs := steadyShards3(nodes)
	d := Decide(p, obs)
	if got := actionsOf(d, "forget-node"); len(got) != 0 {
		t.Fatalf("forget-node %v for a node that serves slots", got)
	}
	if !strings.Contains(d.Waiting, "old-s1-0 (last at 10.9.9.8) serves 5461 slot(s) in the view of s0-0, s0-1") {
		t.Fatalf("waiting %q, want the ghost named with its slots", d.Waiting)
	}
}

// TestNoGhostWhileAPodTheObjectsAskForIsMissing: s2-1 is missing from the observation (its pod
// deleted while a scale-down waits, say): it comes back on its claim as the same node, so an ID
// no observed pod has may be it; nothing is forgotten.
func TestNoGhostWhileAPodTheObjectsAskForIsMissing(t *testing.T) {
	nodes := threeShards()
	for i := range nodes {
		nodes[i].Valkey.Known = append(nodes[i].Valkey.Known, KnownNode{ID: "maybe-s2-1", IP: "10.9.9.9"})
	}
	p, obs := steadyShards3(nodes[:5])
	if got := actionsOf(Decide(p, obs), "forget-node"); len(got) != 0 {
		t.Fatalf("forget-node %v while s2-1 is not observed", got)
	}
}

// TestALiveOrOpenStrangerIsNotForgotten: an ID no pod has is left alone when some node has a
// live bus link to it (a process answers as it: a node the user attached) or when a slot is open
// towards its address (forgetting it would close the slot where its keys may be).
func TestALiveOrOpenStrangerIsNotForgotten(t *testing.T) {
	nodes := threeShards()
	nodes[0].Valkey.Known = append(nodes[0].Valkey.Known, KnownNode{ID: "attached", IP: "10.9.9.7", Connected: true})
	nodes[1].Valkey.Known = append(nodes[1].Valkey.Known, KnownNode{ID: "attached", IP: "10.9.9.7"})
	nodes[2].Valkey.Known = append(nodes[2].Valkey.Known, KnownNode{ID: "target", IP: "10.9.9.6"})
	nodes[0].Valkey.OpenSlots = []OpenSlot{{Slot: 7, Peer: "10.9.9.6"}}
	p, obs := steadyShards3(nodes)
	d := Decide(p, obs)
	if got := actionsOf(d, "forget-node"); len(got) != 0 {
		t.Fatalf("forget-node %v for a live node and a slot's migration target", got)
	}
	if !strings.HasPrefix(d.Waiting, OpenSlotsUnknown) {
		t.Fatalf("waiting %q, want the open slot named", d.Waiting)
	}
}
