package machine

import (
	"strings"
	"testing"
)

// knowEachOther gives every node an ID and a view of the cluster bus listing every other node
// with its current config epoch: a converged bus.
func knowEachOther(nodes []Node) {
	for i := range nodes {
		nodes[i].Valkey.NodeID = "id-" + nodes[i].Name
	}
	for i := range nodes {
		nodes[i].Valkey.Known = nil
		for j := range nodes {
			if j != i {
				nodes[i].Valkey.Known = append(nodes[i].Valkey.Known, KnownNode{ID: nodes[j].Valkey.NodeID, IP: nodes[j].Pod.IP, ConfigEpoch: nodes[j].Valkey.ConfigEpoch, Connected: true})
			}
		}
	}
}

// TestNoSlotMovesFromAPrimaryThatSharesItsConfigEpoch: 3 → 4 shards, and shards 1 and 2's
// primaries are on one config epoch (a bootstrap's bumps on nodes that had not heard of each
// other yet). Their moves wait, named, until Valkey parts them: either of the two could take a
// newer epoch in the middle of a hand-over and overrule the new shard's claim, and the new
// shard would delete the keys it just received. Shard 0's move goes on. Once parted, all move.
// A primary the source does not know on the bus never collides with it, and a replica's epoch
// is no claim.
func TestNoSlotMovesFromAPrimaryThatSharesItsConfigEpoch(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 4
	three := SlotPlan(3)
	nodes := append(append(append(clusterShard(0, three[0]), clusterShard(1, three[1])...), clusterShard(2, three[2])...), clusterShard(3)...)
	nodes[2].Valkey.ConfigEpoch, nodes[4].Valkey.ConfigEpoch = 6, 6 // s1-0, s2-0
	nodes[6].Valkey.ConfigEpoch = 7                                 // s3-0, the new shard
	knowEachOther(nodes)
	d := Decide(reshardingTo(4, 4), obsAt(1, spec, nodes...))
	if _, got := movedSlots(t, d); strings.Join(got, " ") != "4096-5460:0->3" {
		t.Fatalf("moves %v, want only shard 0's while shards 1 and 2 share an epoch", got)
	}
	if d.Waiting.Kind != WaitSharedEpoch || d.Waiting.Node != "s1-0" || d.Waiting.Peer != "s2-0" || d.Waiting.N != 6 {
		t.Fatalf("waiting %+v, want s1-0's epoch 6 shared with s2-0", d.Waiting)
	}
	if !strings.Contains(d.Waiting.String(), "s1-0 and s2-0 to part their config epoch 6") {
		t.Fatalf("waiting %q does not say which nodes share which epoch", d.Waiting)
	}

	nodes[4].Valkey.ConfigEpoch = 8 // Valkey parted them
	knowEachOther(nodes)
	d = Decide(reshardingTo(4, 4), obsAt(2, spec, nodes...))
	if _, got := movedSlots(t, d); len(got) != 3 {
		t.Fatalf("moves %v once the epochs parted, want all three (waiting %q)", got, d.Waiting)
	}

	// A replica on a primary's epoch: no claim, no collision.
	nodes[5].Valkey.ConfigEpoch = 6 // s2-1
	knowEachOther(nodes)
	if _, got := movedSlots(t, Decide(reshardingTo(4, 4), obsAt(3, spec, nodes...))); len(got) != 3 {
		t.Fatalf("moves %v with a replica on a primary's epoch, want all three", got)
	}
	// A primary on the same epoch that the source does not know (off its bus): no collision.
	nodes[4].Valkey.ConfigEpoch = 6
	knowEachOther(nodes)
	var known []KnownNode
	for _, k := range nodes[2].Valkey.Known {
		if k.ID != nodes[4].Valkey.NodeID {
			known = append(known, k)
		}
	}
	nodes[2].Valkey.Known = known
	d = Decide(reshardingTo(4, 4), obsAt(4, spec, nodes...))
	if _, got := movedSlots(t, d); !strings.Contains(strings.Join(got, " "), "1->3") {
		t.Fatalf("moves %v: s1-0 does not know s2-0, so their epochs cannot collide; want shard 1's move", got)
	}
}

// TestNoSlotMovesToATargetThatHasNotHeardTheSourcesEpoch: the new shard's view still gives
// shard 1's primary an older epoch than it has (it was just parted from a collision). Taking
// the slots, the target would keep its own epoch as the newest it knows, no newer than the
// source's, and the source's claim would win: that move waits until the target has heard.
func TestNoSlotMovesToATargetThatHasNotHeardTheSourcesEpoch(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 4
	three := SlotPlan(3)
	nodes := append(append(append(clusterShard(0, three[0]), clusterShard(1, three[1])...), clusterShard(2, three[2])...), clusterShard(3)...)
	nodes[2].Valkey.ConfigEpoch, nodes[6].Valkey.ConfigEpoch = 9, 7 // s1-0, s3-0
	knowEachOther(nodes)
	for i, k := range nodes[6].Valkey.Known {
		if k.ID == nodes[2].Valkey.NodeID {
			nodes[6].Valkey.Known[i].ConfigEpoch = 6
		}
	}
	d := Decide(reshardingTo(4, 4), obsAt(1, spec, nodes...))
	if _, got := movedSlots(t, d); strings.Contains(strings.Join(got, " "), "1->3") || len(got) != 2 {
		t.Fatalf("moves %v, want shards 0 and 2's only while s3-0 has not heard of s1-0's epoch", got)
	}
	if d.Waiting.Kind != WaitEpochUnheard || d.Waiting.Node != "s3-0" || d.Waiting.Peer != "s1-0" || d.Waiting.N != 9 || d.Waiting.Of != 6 {
		t.Fatalf("waiting %+v, want s3-0 to hear of s1-0's epoch 9 (it has 6)", d.Waiting)
	}
	knowEachOther(nodes)
	if _, got := movedSlots(t, Decide(reshardingTo(4, 4), obsAt(2, spec, nodes...))); len(got) != 3 {
		t.Fatalf("moves %v once heard, want all three", got)
	}
}

// TestOpenMovesThatShareANodeRunOneAfterTheOther: slots left open from shard 0 to shard 1 and
// from shard 1 to shard 2. Finished together, shard 1's primary would take slot 200 with a new
// epoch while it still claims slot 100 as the first move's source, and its claim could overrule
// shard 2's. The first runs alone; the second follows once it is done.
func TestOpenMovesThatShareANodeRunOneAfterTheOther(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 3
	plan := SlotPlan(3)
	nodes := append(append(clusterShard(0, plan[0]), clusterShard(1, plan[1])...), clusterShard(2, plan[2])...)
	s0, s1, s2 := &nodes[0], &nodes[2], &nodes[4]
	s0.Valkey.OpenSlots = []OpenSlot{{Slot: 100, Peer: s1.Pod.IP}}
	s1.Valkey.OpenSlots = []OpenSlot{{Slot: 100, Peer: s0.Pod.IP, Importing: true}, {Slot: 6000, Peer: s2.Pod.IP}}
	s2.Valkey.OpenSlots = []OpenSlot{{Slot: 6000, Peer: s1.Pod.IP, Importing: true}}
	knowEachOther(nodes)
	d := Decide(reshardingTo(3, 3), obsAt(1, spec, nodes...))
	if _, got := movedSlots(t, d); strings.Join(got, " ") != "100-100:0->1" {
		t.Fatalf("moves %v, want slot 100 finished alone first", got)
	}
	s0.Valkey.OpenSlots, s1.Valkey.OpenSlots = nil, []OpenSlot{{Slot: 6000, Peer: s2.Pod.IP}}
	d = Decide(reshardingTo(3, 3), obsAt(2, spec, nodes...))
	if _, got := movedSlots(t, d); strings.Join(got, " ") != "6000-6000:1->2" {
		t.Fatalf("moves %v, want slot 6000 next", got)
	}
}

// TestAnOpenSlotAndAStrayWaitForASharedEpochToo: the other ways slots leave a primary, an open
// migration finished and an empty stray's slots given to its shard's primary, wait the same.
func TestAnOpenSlotAndAStrayWaitForASharedEpochToo(t *testing.T) {
	spec := testSpec(1)
	spec.Mode, spec.Shards = ModeCluster, 3
	plan := SlotPlan(3)
	nodes := append(append(clusterShard(0, plan[0]), clusterShard(1, plan[1])...), clusterShard(2, plan[2])...)
	nodes[0].Valkey.OpenSlots = []OpenSlot{{Slot: 100, Peer: nodes[2].Pod.IP}}
	nodes[2].Valkey.OpenSlots = []OpenSlot{{Slot: 100, Peer: nodes[0].Pod.IP, Importing: true}}
	nodes[0].Valkey.ConfigEpoch = nodes[4].Valkey.ConfigEpoch // s0-0 and s2-0
	knowEachOther(nodes)
	d := Decide(reshardingTo(3, 3), obsAt(1, spec, nodes...))
	if _, got := movedSlots(t, d); len(got) != 0 || d.Waiting.Kind != WaitSharedEpoch || d.Waiting.Node != "s0-0" {
		t.Fatalf("open slot: moves %v, waiting %q; want the wait for s0-0's shared epoch", got, d.Waiting)
	}

	p, obs := strayShard(0)
	obs.Nodes[1].Valkey.ConfigEpoch = obs.Nodes[0].Valkey.ConfigEpoch
	knowEachOther(obs.Nodes)
	d = Decide(p, obs)
	if got := actionsOf(d, "migrate-slots"); len(got) != 0 || d.Waiting.Kind != WaitSharedEpoch || d.Waiting.Node != "s0-1" {
		t.Fatalf("stray: migrate-slots %v, waiting %q; want the wait for s0-1's shared epoch", got, d.Waiting)
	}
}
