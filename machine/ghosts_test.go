package machine

import (
	"fmt"
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
	if d.Waiting.Kind != WaitGhostsServeSlots || !strings.Contains(d.Waiting.Detail, "old-s1-0 (last at 10.9.9.8) serves 5461 slot(s) in the view of s0-0, s0-1") {
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
	// The objects ask for one pod per shard (a cluster re-created on kept claims, its objects
	// not grown back to the spec yet): s2-1 is not asked for by the objects, but the spec
	// asks for it, and its claim brings it back as the same node (found by the simulator).
	p, obs = steadyShards3(append(nodes[:5:5], nodes[5]))
	var few []Node
	for _, n := range obs.Nodes {
		if n.Ordinal == 0 {
			few = append(few, n)
		}
	}
	obs.Nodes, obs.Objects.Replicas = few, 0
	if got := actionsOf(Decide(p, obs), "forget-node"); len(got) != 0 {
		t.Fatalf("forget-node %v while the spec asks for pods not observed yet", got)
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
	if d.Waiting.Kind != WaitOpenSlotsUnknown {
		t.Fatalf("waiting %q, want the open slot named", d.Waiting)
	}
}

// TestAStrandedGhostIsForgotten: the old ID of shard 1's primary serves shard 1's slots in every
// view, no answering primary serves them, and no node follows it (the shard's other node is a
// primary without slots: it came back after the takeover and learnt of the newer claim). No
// failover can take those slots; the machine forgets the ID everywhere (Valkey then unassigns
// its slots) and gives them to shard 1's primary, the one primary without slots that holds
// keys. While a node still follows it, the failover's takeover is the way, and the machine
// waits.
func TestAStrandedGhostIsForgotten(t *testing.T) {
	nodes := strandedShards(1)
	nodes[2].Valkey.Keys = 14 // s1-0, shard 1's recorded primary, holds the shard's keys
	p, obs := steadyShards3(nodes)
	d := Decide(p, obs)
	if got := actionsOf(d, "forget-node"); len(got) != 1 || got[0] != "forget-node old-s1-1 (10.9.9.1)" {
		t.Fatalf("forget-node %v, want the stranded old-s1-1 (waiting %q)", got, d.Waiting)
	}
	// Its slots go to shard 1's recorded primary, the one shard without slots, in the same
	// decision: free slots would carry no trace of the shard that holds their keys.
	if got := actionsOf(d, "assign-slots"); len(got) != 1 || got[0] != fmt.Sprintf("assign-slots s1-0 [%v]", SlotPlan(3)[1]) {
		t.Fatalf("assign-slots %v, want shard 1's slots to s1-0", got)
	}
	if !Blocked(d.Actions[len(d.Actions)-1], []Action{ForgetNode{ID: "old-s1-1"}}) {
		t.Fatalf("the assignment is not skipped when the forgetting fails")
	}
	// Two primaries without slots hold keys: whose keys the slots are is not known; the
	// machine waits and says how to go on.
	two := append([]Node(nil), nodes...)
	two[4].Valkey.Slots, two[4].Valkey.Keys = nil, 3
	d = Decide(p, obsAt(1, obs.Spec, two...))
	if got := actionsOf(d, "forget-node"); len(got) != 0 || d.Waiting.Kind != WaitGhostsServeSlots || !strings.Contains(d.Waiting.Detail, "no node follows it") || !strings.Contains(d.Waiting.Detail, "CLUSTER FORGET old-s1-1") {
		t.Fatalf("forget-node %v (waiting %q) with two primaries without slots holding keys", got, d.Waiting)
	}
	// No primary without slots holds keys: the slots' keys went with the ghost's volume; it is
	// forgotten and its slots are left for the plan.
	none := append([]Node(nil), nodes...)
	none[2].Valkey.Keys = 0
	d = Decide(p, obsAt(1, obs.Spec, none...))
	if got := actionsOf(d, "forget-node"); len(got) != 1 || len(actionsOf(d, "assign-slots")) != 0 {
		t.Fatalf("forget-node %v, assign-slots %v: want the ghost forgotten, nothing assigned", got, actionsOf(d, "assign-slots"))
	}
	nodes[3].Valkey.Role, nodes[3].Valkey.PrimaryID = RoleReplica, "old-s1-1"
	d = Decide(p, obsAt(1, obs.Spec, nodes...))
	if got := actionsOf(d, "forget-node"); len(got) != 0 {
		t.Fatalf("forget-node %v while s1-1 follows the ghost and can take its slots over", got)
	}
}

// strandedShards makes the shards listed primaries without slots, every view forgetting who
// serves what, and adds to every view a ghost per listed shard holding that shard's planned
// slots: the ghosts that took them over and lost their volumes.
func strandedShards(shards ...int) []Node {
	nodes := threeShards()
	for _, s := range shards {
		for i := range nodes {
			if nodes[i].Shard == s {
				nodes[i].Valkey.Role, nodes[i].Valkey.Slots, nodes[i].Valkey.PrimaryHost = RolePrimary, nil, ""
			}
		}
	}
	for i := range nodes {
		for j := range nodes[i].Valkey.Known {
			nodes[i].Valkey.Known[j].Slots = 0
		}
		for _, s := range shards {
			r := SlotPlan(3)[s]
			nodes[i].Valkey.Known = append(nodes[i].Valkey.Known, KnownNode{ID: fmt.Sprintf("old-s%d-1", s), IP: fmt.Sprintf("10.9.9.%d", s), Slots: SlotCount([]SlotRange{r}), Ranges: []SlotRange{r}})
		}
	}
	return nodes
}

// TestStrandedIsJudgedPerGhost: besides shard 1's stranded ghost, s1-0's stale view still gives
// shard 0's slots to the ID s0-0 took them over from. That ghost is no stranded one (s0-0 serves
// its slots): its slots must never be assigned elsewhere (a review found them assigned to s1-0,
// because "stranded" was judged for the whole cluster).
func TestStrandedIsJudgedPerGhost(t *testing.T) {
	nodes := strandedShards(1)
	nodes[2].Valkey.Keys = 14
	nodes[2].Valkey.Known = append(nodes[2].Valkey.Known, KnownNode{ID: "old-s0-0", IP: "10.9.9.6", Slots: 5461, Ranges: []SlotRange{SlotPlan(3)[0]}})
	p, obs := steadyShards3(nodes)
	d := Decide(p, obs)
	want := fmt.Sprintf("assign-slots s1-0 [%v]", SlotPlan(3)[1])
	if got := actionsOf(d, "assign-slots"); len(got) != 1 || got[0] != want {
		t.Fatalf("assign-slots %v, want only shard 1's stranded slots to s1-0", got)
	}
	for _, f := range actionsOf(d, "forget-node") {
		if strings.Contains(f, "old-s0-0") {
			t.Fatalf("forgets old-s0-0, whose slots s0-0 serves: %v", d.Actions)
		}
	}
}

// TestTwoStrandedGhostsAndOneHolderWait: shards 1 and 2 are stranded, only s1-0 holds keys: which
// ghost's slots are its keys' is not known; nothing is assigned (a review found both shards'
// slots given to s1-0), and the machine says so.
func TestTwoStrandedGhostsAndOneHolderWait(t *testing.T) {
	nodes := strandedShards(1, 2)
	nodes[2].Valkey.Keys = 14
	p, obs := steadyShards3(nodes)
	d := Decide(p, obs)
	if got := actionsOf(d, "assign-slots"); len(got) != 0 {
		t.Fatalf("assign-slots %v with two stranded ghosts and one holder", got)
	}
	if d.Waiting.Kind != WaitGhostsServeSlots || !strings.Contains(d.Waiting.Detail, "2 such node(s)") {
		t.Fatalf("waiting %q, want the two stranded ghosts named", d.Waiting)
	}
}
