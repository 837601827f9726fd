package machine

import (
	"fmt"
	"strconv"
	"strings"
)

// Resharding (cluster mode) works towards Op.Reshard.Shards shards with the balanced slot plan:
// create the pods of new shards, wire each new shard to its first node and record it
// (shard-added), migrate every range the plan moves (slotMoves) from a converged cluster, then remove the
// nodes of shards beyond the target and let EnsureObjects delete their pods. Every step is
// visible in the world (pods, joined nodes, slot owners), so the operation resumes after a
// restart or a failover.

func guardShardAdded(d *decider) (outcome, bool) {
	p := d.p
	s := len(p.Shards)
	if s >= p.Op.Reshard.Shards {
		return outcome{}, false
	}
	first := d.freeChoice(s)
	if first == nil || !d.shardWired(s, first) {
		return outcome{}, false
	}
	next := p
	next.Shards = recordPrimary(p.Shards, s, first)
	return outcome{next: next, message: fmt.Sprintf("shard %d added with primary %s", s, first.Name)}, true
}

// guardShardRemoved forgets the records of the last shards beyond the target once they serve
// no slot and every node of theirs answers, off the cluster bus (remove-node reset them).
// Their pods go next (ensure-objects): without this, the machine would take the deleted
// primary for a lost one, fail it over and bring the shard back (found on real Valkey: a
// 4 → 3 resharding re-created shard 3 again and again).
func guardShardRemoved(d *decider) (outcome, bool) {
	p := d.p
	keep := len(p.Shards)
	for keep > p.Op.Reshard.Shards && d.shardOffTheBus(p, keep-1) {
		keep--
	}
	if keep == len(p.Shards) {
		return outcome{}, false
	}
	next := p
	next.Shards = append([]ShardRecord(nil), p.Shards[:keep]...)
	removed := make([]string, 0, len(p.Shards)-keep)
	for s := keep; s < len(p.Shards); s++ {
		removed = append(removed, strconv.Itoa(s))
	}
	return outcome{next: next, message: fmt.Sprintf("shard(s) %s removed: their slots moved to the other shards and their nodes left the cluster", strings.Join(removed, ", "))}, true
}

// shardOffTheBus reports whether shard s has pods, every one answering, none on the cluster
// bus (see leftTheBus) and none serving a slot or holding a key.
func (d *decider) shardOffTheBus(p Persisted, s int) bool {
	nodes := d.v.shard(s)
	if len(nodes) == 0 {
		return false
	}
	for _, n := range nodes {
		if !n.Reachable || !leftTheBus(n) || len(n.Valkey.Slots) > 0 || n.Valkey.Keys > 0 {
			return false
		}
	}
	return true
}

// leftTheBus reports whether n's remove-node is over: it is linked to no node and knows none
// (CLUSTER RESET forgot them all). Unlinked is not enough: a node every other one forgot but
// that was not reset still holds the cluster's view, and its removal had not yet drained the
// clients that still sent it commands for the slots it gave away (found on real Valkey 9.1: a
// failed removal left a primary so, its pod was deleted, and a client met a closed connection).
func leftTheBus(n *Node) bool {
	return !n.Valkey.Joined && len(n.Valkey.Known) == 0
}

func guardReshardComplete(d *decider) (outcome, bool) {
	p := d.p
	target := p.Op.Reshard.Shards
	if len(p.Shards) < target || d.v.shardCount() > target {
		return outcome{}, false
	}
	if open, _ := d.openMoves(); len(d.slotMoves(p, target)) > 0 || len(open) > 0 {
		return outcome{}, false
	}
	trimmed := p
	trimmed.Shards = p.Shards[:target]
	if ok, _ := d.converged(trimmed); !ok {
		return outcome{}, false
	}
	next := trimmed
	next.Shards = append([]ShardRecord(nil), p.Shards[:target]...)
	next.Op = Operation{}
	return outcome{next: next, message: fmt.Sprintf("%d shard(s), slots balanced", target)}, true
}

func (d *decider) reshardActions(p Persisted, b *actionList) {
	target := p.Op.Reshard.Shards
	// The recorded shards stay until shard-removed forgets them; a shard beyond the records is
	// going, even while its pods still answer or terminate (keeping it would bring it back).
	d.ensureObjects(p, max(target, len(p.Shards)), b)
	for s := range p.Shards {
		// A shard beyond the target is kept whole while it serves slots; once they moved away
		// its nodes leave the bus (remove-node below) and nothing brings them back.
		if s < d.v.shardCount() && (s < target || d.servesSlots(p, s)) {
			d.converge(p, s, true, b)
		}
	}
	for s := len(p.Shards); s < target; s++ {
		if first := d.freeChoice(s); first != nil {
			d.wireShard(s, first, b)
		} else {
			b.wait(Wait{Kind: WaitNoNodeAnswersYet, Shard: s})
		}
	}
	if len(b.actions) > 0 {
		return
	}
	if len(p.Shards) < target {
		b.wait(Wait{Kind: WaitShardComingUp, Shard: len(p.Shards)})
		return
	}
	// The shards that must be whole before slots move: those that stay, and those beyond the
	// target while they still serve slots (once they serve none, their nodes are leaving).
	live := p
	n := target
	for s := target; s < min(len(p.Shards), d.v.shardCount()); s++ {
		if d.servesSlots(p, s) {
			n = s + 1
		}
	}
	live.Shards = p.Shards[:min(len(p.Shards), n)]
	d.forgetGhosts(p, true, b)
	if len(b.actions) > 0 {
		return
	}
	if ok, why := d.converged(live); !ok {
		b.wait(Wait{Kind: WaitNotConverged, Detail: why})
		return
	}
	// Migrations left open are finished first, towards where they were going.
	open, unknown := d.openMoves()
	if len(unknown) > 0 {
		b.wait(openSlotsUnknownWait(unknown))
	}
	if len(open) > 0 {
		var together oneWay
		for _, m := range open {
			from, to := d.slotReporter(p, m.from), d.slotReporter(p, m.to)
			if from == nil || to == nil {
				b.wait(Wait{Kind: WaitOpenSlotNoPrimary, N: int64(m.Start), Shard: m.from, ToShard: m.to})
				continue
			}
			if together.admit(from.Name, to.Name) {
				d.migrate(m.from, m.to, from, to, m.SlotRange, b)
			}
		}
		return
	}
	// Every move at once: each involves its own pair of primaries' slots, and the actuators
	// run them side by side (several sources feeding one new shard is where time is won).
	if moves := d.slotMoves(p, target); len(moves) > 0 {
		// Free slots first: assigning them writes nothing, and while any slot is free every node
		// says cluster_state fail, which the migrations below wait out (a stranded ghost's
		// slots, freed by forgetting it: the simulator found the resharding waiting for ever).
		free := false
		for _, m := range moves {
			if m.from < 0 {
				to := d.v.node(p.Shards[m.to].Primary)
				b.add(AssignSlots{Target: TargetOf(m.to, to), Slots: []SlotRange{m.SlotRange}})
				free = true
			}
		}
		if free {
			return
		}
		// A node says cluster_state fail for a moment after it starts, and refuses what a
		// migration writes into it meanwhile (found on real Valkey: "MIGRATE: Target instance
		// replied with error: CLUSTERDOWN", leaving a batch of slots open).
		for _, m := range moves {
			if to := d.v.node(p.Shards[m.to].Primary); to != nil && !to.Valkey.ClusterOK {
				b.wait(Wait{Kind: WaitClusterStateFail, Shard: m.to, Node: to.Name})
				return
			}
		}
		for _, m := range moves {
			to := d.v.node(p.Shards[m.to].Primary)
			from := d.v.node(p.Shards[m.from].Primary)
			d.migrate(m.from, m.to, from, to, m.SlotRange, b)
		}
		return
	}
	if why := d.staleSlotViews(target); why != "" {
		b.wait(Wait{Kind: WaitStaleSlotViews, Detail: why})
		return
	}
	for s := target; s < d.v.shardCount(); s++ {
		for _, n := range d.v.shard(s) {
			if n.Reachable && !leftTheBus(n) {
				b.add(RemoveNode{Target: Target{Shard: s, Node: n.Name}})
			}
		}
	}
}

// staleSlotViews names a node that stays whose view of the cluster bus still gives slots to a
// node of a shard beyond target. Removing that node then (CLUSTER FORGET) would unassign those
// slots in the stale view, and the node would answer "CLUSTERDOWN Hash slot not served" for
// them until gossip from their new owner reached it (found on real Valkey 9.1: a client met it
// once in a 5 → 3 resharding). The new owners' gossip reaches every node within a few cluster
// cron ticks, so the removal waits for it.
func (d *decider) staleSlotViews(target int) string {
	leaving := map[string]string{}
	for s := target; s < d.v.shardCount(); s++ {
		for _, n := range d.v.shard(s) {
			if n.Valkey.NodeID != "" {
				leaving[n.Valkey.NodeID] = n.Name
			}
		}
	}
	if len(leaving) == 0 {
		return ""
	}
	for s := 0; s < min(target, d.v.shardCount()); s++ {
		for _, n := range d.v.shard(s) {
			if !n.Reachable {
				continue
			}
			for _, k := range n.Valkey.Known {
				if name, ok := leaving[k.ID]; ok && k.Slots > 0 {
					return fmt.Sprintf("waiting for %s to learn that %s's slots moved (its view still gives it %d): removing %s now would leave them unserved there", n.Name, name, k.Slots, name)
				}
			}
		}
	}
	return ""
}

// servesSlots reports whether shard s's primary (as slotReporter finds it) serves any slot.
func (d *decider) servesSlots(p Persisted, s int) bool {
	n := d.slotReporter(p, s)
	return n != nil && len(n.Valkey.Slots) > 0
}
