package machine

import "fmt"

// Resharding (cluster mode) works towards Op.TargetShards shards with the balanced slot plan:
// create the pods of new shards, wire each new shard to its first node and record it
// (shard-added), migrate every range the plan moves (slotMoves) from a converged cluster, then remove the
// nodes of shards beyond the target and let EnsureObjects delete their pods. Every step is
// visible in the world (pods, joined nodes, slot owners), so the operation resumes after a
// restart or a failover.

func guardShardAdded(d *decider) (outcome, bool) {
	p := d.p
	s := len(p.Shards)
	if s >= p.Op.TargetShards {
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

func guardReshardComplete(d *decider) (outcome, bool) {
	p := d.p
	target := p.Op.TargetShards
	if len(p.Shards) < target || d.v.shardCount() > target {
		return outcome{}, false
	}
	if len(d.slotMoves(p, target)) > 0 {
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
	target := p.Op.TargetShards
	keep := target
	for s := target; s < d.v.shardCount(); s++ {
		if d.shardStillMember(s) {
			keep = s + 1
		}
	}
	d.ensureObjects(p, keep, b)
	for s := range p.Shards {
		if s < d.v.shardCount() {
			d.converge(p, s, true, b)
		}
	}
	for s := len(p.Shards); s < target; s++ {
		if first := d.freeChoice(s); first != nil {
			d.wireShard(s, first, b)
		} else {
			b.wait(fmt.Sprintf("shard %d: no node answers yet", s))
		}
	}
	if len(b.actions) > 0 {
		return
	}
	if len(p.Shards) < target {
		b.wait(fmt.Sprintf("waiting for shard %d to come up", len(p.Shards)))
		return
	}
	live := p
	live.Shards = p.Shards[:min(len(p.Shards), max(d.v.shardCount(), target))]
	if ok, why := d.converged(live); !ok {
		b.wait(why)
		return
	}
	// Every move at once: each involves its own pair of primaries' slots, and the actuators
	// run them side by side (several sources feeding one new shard is where time is won).
	if moves := d.slotMoves(p, target); len(moves) > 0 {
		for _, m := range moves {
			to := d.v.node(p.Shards[m.to].Primary)
			if m.from < 0 {
				b.add(AssignSlots{Shard: m.to, Node: to.Name, RunID: to.Valkey.RunID, Slots: []SlotRange{m.SlotRange}})
				continue
			}
			from := d.v.node(p.Shards[m.from].Primary)
			b.add(MigrateSlots{From: m.from, To: m.to, FromNode: from.Name, ToNode: to.Name, Slots: m.SlotRange})
		}
		return
	}
	for s := target; s < d.v.shardCount(); s++ {
		for _, n := range d.v.shard(s) {
			if n.Reachable && n.Valkey.Joined {
				b.add(RemoveNode{Shard: s, Node: n.Name})
			}
		}
	}
}

// shardStillMember reports whether a node of shard s is still part of the cluster bus.
func (d *decider) shardStillMember(s int) bool {
	for _, n := range d.v.shard(s) {
		if !n.Reachable || n.Valkey.Joined {
			return true
		}
	}
	return false
}
