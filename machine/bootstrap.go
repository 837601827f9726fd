package machine

import "fmt"

// Bootstrapping creates the objects and wires each shard to its first node: that node is
// promoted (serves replicas; writes stay fenced until Steady opens them), the others follow
// it, in cluster mode every node joins and the first node gets its planned slots. Nothing has
// been written yet, so any node may be the first; the machine prefers one that already
// serves, so a restart of the operator does not move the choice.

func guardBootstrapComplete(d *decider) (outcome, bool) {
	spec := d.v.spec
	next := d.p
	next.Shards = nil
	next.Op = Operation{}
	plan := slotPlan(spec.Shards)
	for s := 0; s < spec.Shards; s++ {
		first := d.firstNode(s)
		if first == nil || !d.shardWired(s, first) {
			return outcome{}, false
		}
		if spec.Mode == ModeCluster && !sameSlots(first.Valkey.Slots, plan[s]) {
			return outcome{}, false
		}
		next.Shards = recordPrimary(next.Shards, s, first)
	}
	next.PodsPerShard = d.specPods()
	return outcome{next: next, message: fmt.Sprintf("%d shard(s) of %d node(s) wired", spec.Shards, 1+spec.Replicas)}, true
}

func sameSlots(have []SlotRange, want SlotRange) bool {
	return len(have) == 1 && have[0] == want
}

// firstNode is the node a new shard is wired to: one that already serves replicas, else the
// lowest ordinal that answers.
func (d *decider) firstNode(s int) *Node {
	var first *Node
	for _, n := range d.v.shard(s) {
		if !usable(n) {
			continue
		}
		if servesReplicas(n) {
			return n
		}
		if first == nil {
			first = n
		}
	}
	return first
}

// shardWired reports whether shard s has all its pods (objectPods, none beyond), the first
// node serving and every other node following it with the link up (and, in cluster mode,
// every node joined).
func (d *decider) shardWired(s int, first *Node) bool {
	pods := d.objectPods(d.p)
	var nodes []*Node
	for _, n := range d.v.shard(s) {
		switch {
		case n.Ordinal < pods:
			nodes = append(nodes, n)
		case n.Pod.Exists:
			return false
		}
	}
	if len(nodes) != pods || !servesReplicas(first) || first.Ordinal >= pods {
		return false
	}
	for _, n := range nodes {
		if !usable(n) {
			return false
		}
		if d.v.spec.Mode == ModeCluster && !n.Valkey.Joined {
			return false
		}
		if n != first && (!follows(n, first) || !n.Valkey.LinkUp) {
			return false
		}
	}
	return true
}

func (d *decider) bootstrapActions(p Persisted, b *actionList) {
	spec := d.v.spec
	d.ensureObjects(p, spec.Shards, b)
	for s := 0; s < spec.Shards; s++ {
		d.bootstrapShard(s, b)
	}
	if spec.Mode != ModeCluster || len(b.actions) > 0 {
		return
	}
	// Slots, one step at a time, towards the plan: nothing has been written yet, but the
	// spec may have changed the shard count since a first assignment.
	if moves := d.slotMoves(Persisted{}, spec.Shards); len(moves) > 0 {
		m := moves[0]
		to := d.firstNode(m.to)
		var from *Node
		if m.from >= 0 {
			from = d.firstNode(m.from)
		}
		switch {
		case to == nil:
			b.wait(fmt.Sprintf("shard %d: no node answers", m.to))
		case from == nil:
			b.add(AssignSlots{Shard: m.to, Node: to.Name, RunID: to.Valkey.RunID, Slots: []SlotRange{m.SlotRange}})
		default:
			b.add(MigrateSlots{From: m.from, To: m.to, FromNode: from.Name, ToNode: to.Name, Slots: m.SlotRange})
		}
	}
}

// bootstrapShard wires shard s to its first node.
func (d *decider) bootstrapShard(s int, b *actionList) {
	first := d.firstNode(s)
	if first == nil {
		b.wait(fmt.Sprintf("shard %d: no node answers yet", s))
		return
	}
	if !servesReplicas(first) {
		b.add(Promote{Shard: s, Node: first.Name, RunID: first.Valkey.RunID})
	}
	for _, n := range d.v.shard(s) {
		if n == first || !usable(n) {
			continue
		}
		if n.Valkey.Role == RolePrimary || !follows(n, first) {
			b.add(d.replicaOf(s, n, first))
		}
	}
	if d.v.spec.Mode != ModeCluster {
		return
	}
	for _, n := range d.v.shard(s) {
		if usable(n) && !n.Valkey.Joined {
			b.add(AddNode{Shard: s, Node: n.Name, RunID: n.Valkey.RunID})
		}
	}
}
