package machine

import "sort"

// SlotPlan is the balanced layout for n shards: shard i owns a contiguous range, the ranges
// cover every slot once.
func SlotPlan(n int) []SlotRange {
	plan := make([]SlotRange, n)
	for i := range plan {
		plan[i] = SlotRange{Start: i * NumSlots / n, End: (i+1)*NumSlots/n - 1}
	}
	return plan
}

// ownedSlot is a range with the shard that serves it.
type ownedSlot struct {
	SlotRange
	shard int
}

// slotOwners collects, from each recorded shard's primary (or, when it does not answer, any
// node of the shard), the slots the shard serves, sorted by start.
func (d *decider) slotOwners(p Persisted) []ownedSlot {
	var out []ownedSlot
	for s := range d.v.shards {
		if n := d.slotReporter(p, s); n != nil {
			for _, r := range n.Valkey.Slots {
				out = append(out, ownedSlot{r, s})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// Only a primary lists slots as its own (a replica's line in CLUSTER NODES has none), so
// without a recorded primary that answers, the reporter is a primary of the shard that serves
// slots, else any primary, else any node that answers (found on real Valkey: at bootstrap, with
// ordinal 1 chosen as a shard's first node, ordinal 0, a replica, reported the shard's slots as
// unassigned, and the slots were assigned again and again).
func (d *decider) slotReporter(p Persisted, s int) *Node {
	if s < len(p.Shards) {
		if n := d.v.node(p.Shards[s].Primary); n != nil && n.Reachable {
			return n
		}
	}
	var primary, any *Node
	for _, n := range d.v.shard(s) {
		switch {
		case !n.Reachable:
		case n.Valkey.Role == RolePrimary && len(n.Valkey.Slots) > 0:
			return n
		case n.Valkey.Role == RolePrimary && primary == nil:
			primary = n
		case any == nil:
			any = n
		}
	}
	if primary != nil {
		return primary
	}
	return any
}

// slotMove is one step towards the plan: a range owned by shard from (-1: by nobody) that
// the plan gives to shard to.
type slotMove struct {
	SlotRange
	from, to int
}

// slotMoves lists the differences between the observed owners and the plan for n shards.
func (d *decider) slotMoves(p Persisted, n int) []slotMove {
	owners := d.slotOwners(p)
	var moves []slotMove
	for to, want := range SlotPlan(n) {
		cur := want.Start
		for _, o := range owners {
			if o.End < cur || o.Start > want.End {
				continue
			}
			lo, hi := max(o.Start, cur), min(o.End, want.End)
			if lo > cur {
				moves = append(moves, slotMove{SlotRange{cur, lo - 1}, -1, to})
			}
			if o.shard != to {
				moves = append(moves, slotMove{SlotRange{lo, hi}, o.shard, to})
			}
			cur = hi + 1
			if cur > want.End {
				break
			}
		}
		if cur <= want.End {
			moves = append(moves, slotMove{SlotRange{cur, want.End}, -1, to})
		}
	}
	return moves
}
