package machine

import (
	"fmt"
	"sort"
	"strings"
)

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
//
// A recorded primary that serves no slots gives way to another primary of its shard that serves
// some: an empty node back from nodes.conf still serving the shard's slots while the primary
// elected for its data serves none (strayOwner moves them). Its slots are the shard's, not free
// (a review found a shrink handing a leaving shard's slots to the staying one as free slots).
func (d *decider) slotReporter(p Persisted, s int) *Node {
	var recorded *Node
	if s < len(p.Shards) {
		if n := d.v.node(p.Shards[s].Primary); n != nil && n.Reachable {
			if len(n.Valkey.Slots) > 0 {
				return n
			}
			recorded = n
		}
	}
	if recorded != nil {
		for _, n := range d.v.shard(s) {
			if n.Reachable && n.Valkey.Role == RolePrimary && len(n.Valkey.Slots) > 0 {
				return n
			}
		}
		return recorded
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

// slotQuota is how many slots shard s owns in a balanced cluster of n shards: the size of its
// range in SlotPlan(n), 0 for a shard beyond n.
func slotQuota(s, n int) int {
	if s >= n {
		return 0
	}
	r := SlotPlan(n)[s]
	return r.End - r.Start + 1
}

// slotMoves lists the moves that balance the observed owners over n shards while moving as few
// slots as possible (a resharding moves keys, and keys cost time). A shard's share is the size
// of its range in SlotPlan(n), its home; each shard keeps its home slots first, then its lowest
// others, up to its share; the slots beyond (all of a shard beyond n) and the unassigned ones go
// to the shards below their share, each taking what lies in its home first, then in slot order.
// From nothing this is SlotPlan(n) exactly, and 3 → 4 → 3 shards comes back to it; 3 → 4 moves
// a quarter of the slots (one range from each shard), where re-laying contiguous ranges would
// move half (valkey-cli --cluster rebalance moves the same quarter); a slot that strayed (an
// open migration finished elsewhere) goes home. Every move takes slots from a shard above its
// share or from nobody to one below, so each completed move brings the plan closer and a plan
// decided again midway is the rest of the first one.
func (d *decider) slotMoves(p Persisted, n int) []slotMove {
	return balance(d.slotOwners(p), n)
}

// PlanSlotMoves is the machine's plan (slotMoves) for shards that own the given ranges, shard
// by index, balanced over n shards: for tools and benchmarks that move slots as the operator
// would.
func PlanSlotMoves(owned map[int][]SlotRange, n int) []SlotMove {
	var owners []ownedSlot
	for s, rs := range owned {
		for _, r := range rs {
			owners = append(owners, ownedSlot{r, s})
		}
	}
	sort.Slice(owners, func(i, j int) bool {
		return owners[i].Start < owners[j].Start || (owners[i].Start == owners[j].Start && owners[i].shard < owners[j].shard)
	})
	var out []SlotMove
	for _, m := range balance(owners, n) {
		out = append(out, SlotMove{SlotRange: m.SlotRange, From: m.from, To: m.to})
	}
	return out
}

// SlotMove is one move of a plan: Slots from shard From (-1: unassigned) to shard To.
type SlotMove struct {
	SlotRange
	From, To int
}

func balance(owners []ownedSlot, n int) []slotMove {
	if n <= 0 {
		return nil
	}
	// The rules are stated slot by slot (slotMoves); they are carried out here on runs of
	// slots with one owner and one home, which a rule treats alike from the run's first slot
	// on, so that a plan costs a few runs rather than NumSlots slots per decision.
	plan := SlotPlan(n)
	share := make([]int, n)
	for shard, r := range plan {
		share[shard] = r.End - r.Start + 1
	}
	runs := homeRuns(paintOwners(owners), plan)
	kept := make([]int, n)
	room := func(shard int) int {
		if shard < 0 || shard >= n {
			return 0
		}
		return max(share[shard]-kept[shard], 0)
	}
	// Each shard keeps its home slots first, then its lowest others, up to its share.
	for _, homeFirst := range []bool{true, false} {
		for i := range runs {
			r := &runs[i]
			if r.owner >= 0 && r.owner < n && (r.owner == r.home) == homeFirst {
				r.keep = min(r.size(), room(r.owner))
				kept[r.owner] += r.keep
			}
		}
	}
	// The rest goes to the shards below their share: first what lies in a receiver's home
	// range, then in slot order.
	for i := range runs {
		r := &runs[i]
		r.toHome = min(r.size()-r.keep, room(r.home))
		kept[r.home] += r.toHome
	}
	next := 0
fill:
	for i := range runs {
		r := &runs[i]
		for s := r.Start + r.keep + r.toHome; s <= r.End; {
			for next < n && room(next) == 0 {
				next++
			}
			if next == n {
				break fill
			}
			c := min(r.End-s+1, room(next))
			r.rest = append(r.rest, slotMove{SlotRange{s, s + c - 1}, r.owner, next})
			kept[next] += c
			s += c
		}
	}
	var moves []slotMove
	add := func(m slotMove) {
		if k := len(moves) - 1; k >= 0 && moves[k].to == m.to && moves[k].from == m.from && moves[k].End == m.Start-1 {
			moves[k].End = m.End
			return
		}
		moves = append(moves, m)
	}
	for _, r := range runs {
		if r.toHome > 0 {
			add(slotMove{SlotRange{r.Start + r.keep, r.Start + r.keep + r.toHome - 1}, r.owner, r.home})
		}
		for _, m := range r.rest {
			add(m)
		}
	}
	return moves
}

// slotRun is a run of slots with one owner (-1: none) and one home, and what balance does
// with it: its first keep slots stay, the next toHome go home, rest lists where the others go.
type slotRun struct {
	SlotRange
	owner, home  int
	keep, toHome int
	rest         []slotMove
}

func (r slotRun) size() int { return r.End - r.Start + 1 }

// paintOwners lays the owners over every slot in order, a later owner of a slot replacing an
// earlier one, and returns the runs from slot 0 to the last, unowned ones with owner -1.
func paintOwners(owners []ownedSlot) []slotRun {
	runs := []slotRun{{SlotRange: SlotRange{0, NumSlots - 1}, owner: -1}}
	for _, o := range owners {
		a, b := max(o.Start, 0), min(o.End, NumSlots-1)
		if a > b {
			continue
		}
		out := make([]slotRun, 0, len(runs)+2)
		for _, r := range runs {
			if r.Start < a {
				out = append(out, slotRun{SlotRange: SlotRange{r.Start, min(r.End, a-1)}, owner: r.owner})
			}
		}
		out = append(out, slotRun{SlotRange: SlotRange{a, b}, owner: o.shard})
		for _, r := range runs {
			if r.End > b {
				out = append(out, slotRun{SlotRange: SlotRange{max(r.Start, b+1), r.End}, owner: r.owner})
			}
		}
		runs = out
	}
	return runs
}

// homeRuns splits the runs where the plan's ranges (the homes) begin.
func homeRuns(runs []slotRun, plan []SlotRange) []slotRun {
	out := make([]slotRun, 0, len(runs)+len(plan))
	h := 0
	for _, r := range runs {
		for s := r.Start; s <= r.End; {
			for plan[h].End < s {
				h++
			}
			e := min(r.End, plan[h].End)
			out = append(out, slotRun{SlotRange: SlotRange{s, e}, owner: r.owner, home: h})
			s = e + 1
		}
	}
	return out
}

// SlotsToMove is how many slots the plan for n shards still moves, as the machine sees obs
// with p: the resharding progress that status reports.
func SlotsToMove(p Persisted, obs Observation, n int) int {
	d := takeDecider(p, obs)
	defer d.release()
	left := 0
	for _, m := range d.slotMoves(p, n) {
		left += m.End - m.Start + 1
	}
	return left
}

// OpenSlotsUnknown begins the wait line for slots left open towards a node that is no pod of
// this cluster: the machine cannot tell where their keys are, so it does not touch them.
const OpenSlotsUnknown = "not finishing open slots whose other end is no pod of this cluster"

func openSlotsUnknownWait(unknown []string) Wait {
	return Wait{Kind: WaitOpenSlotsUnknown, Detail: strings.Join(unknown, "; ")}
}

// openMoves are the migrations left open in the cluster (a classic migration interrupted, its
// plan since changed): a slot a primary migrates to another, or imports from another, is
// finished towards where it was going before any move of the plan (re-aiming it would strand
// the keys already moved; the plan moves it back afterwards if it must). One move per slot,
// both ends known shards; a slot whose other end no pod has is left to the user (status says
// so through the wait).
func (d *decider) openMoves() (moves []slotMove, unknown []string) {
	seen := map[int]bool{}
	for _, n := range d.obs.Nodes {
		if !n.Reachable || n.Valkey.Role != RolePrimary {
			continue
		}
		for _, o := range n.Valkey.OpenSlots {
			if seen[o.Slot] {
				continue
			}
			peer := d.v.nodeByIP(o.Peer)
			if peer == nil {
				unknown = append(unknown, fmt.Sprintf("slot %d open on %s towards %q", o.Slot, n.Name, o.Peer))
				continue
			}
			from, to := n.Shard, peer.Shard
			if o.Importing {
				from, to = peer.Shard, n.Shard
			}
			if from == to {
				continue
			}
			seen[o.Slot] = true
			moves = append(moves, slotMove{SlotRange{o.Slot, o.Slot}, from, to})
		}
	}
	sort.Slice(moves, func(i, j int) bool { return moves[i].Start < moves[j].Start })
	// Neighbouring slots open between the same shards are one move (an interrupted batch
	// leaves dozens).
	var merged []slotMove
	for _, m := range moves {
		if k := len(merged) - 1; k >= 0 && merged[k].from == m.from && merged[k].to == m.to && merged[k].End == m.Start-1 {
			merged[k].End = m.Start
			continue
		}
		merged = append(merged, m)
	}
	return merged, unknown
}
