package conformance

import (
	"context"
	"fmt"
	"slices"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// ClusterWorld is one cluster in cluster mode of two shards of two nodes, each Steady with a
// primary serving half the slots (shard 0 the lower half) and a replica following it, keys
// written into both shards before the table: the world of ClusterTable. Which ordinal is a
// shard's primary is the bootstrap's choice, so rows name nodes by role and follow them by name.
type ClusterWorld interface {
	Observer
	DataWorld
	// EmptyRestart restarts the named node's process on an empty volume, as a pod whose disk
	// was lost does: it comes back as a new node of the cluster bus, and its old ID stays in
	// the others' views (a ghost, what forget-node is for). A fault, not an action: rows with
	// Ghost make it before their action.
	EmptyRestart(ctx context.Context, node string) error
}

// ClusterTable is the actuator contract of the cluster-mode actions. Rows run in order; each
// starts from the world the rows before it left.
var ClusterTable = []Row{
	{
		Name: "assign-slots of slots another node serves is refused: slots move only by migration",
		Action: func(b machine.Observation) (machine.Action, error) {
			n := owner(b, 1)
			if n == nil || owner(b, 0) == nil {
				return nil, missing(b, "each shard's primary")
			}
			return machine.AssignSlots{Target: machine.Target{Shard: 1, Node: n.Name, RunID: n.Valkey.RunID}, Slots: []machine.SlotRange{{Start: 0, End: 99}}}, nil
		},
		Refused: true,
		Effect:  "shard 0's primary still serves slots 0-99, shard 1's not",
		Expect: func(b, a machine.Observation) bool {
			return serves(same(a, owner(b, 0)), 0, 99) && !servesAny(same(a, owner(b, 1)), 0, 99)
		},
	},
	{
		Name: "migrate-slots moves slots with their keys to another shard's primary",
		Action: func(b machine.Observation) (machine.Action, error) {
			from, to := owner(b, 0), owner(b, 1)
			if from == nil || to == nil {
				return nil, missing(b, "each shard's primary")
			}
			return machine.MigrateSlots{From: 0, To: 1, FromNode: from.Name, ToNode: to.Name, FromRunID: from.Valkey.RunID, ToRunID: to.Valkey.RunID,
				Slots: migrated}, nil
		},
		Resumable:  true,
		ChecksData: true,
		Effect: "shard 1's primary serves the slots in its own view and in shard 0's primary's, which serves them no more; " +
			"keys moved from shard 0 to shard 1 and none lost; no slot left open",
		Expect: func(b, a machine.Observation) bool {
			wasFrom, wasTo := owner(b, 0), owner(b, 1)
			from, to := same(a, wasFrom), same(a, wasTo)
			return serves(to, migrated.Start, migrated.End) && !servesAny(from, migrated.Start, migrated.End) &&
				seesServing(from, to.Valkey.NodeID, migrated) &&
				from.Valkey.Keys < wasFrom.Valkey.Keys && to.Valkey.Keys > wasTo.Valkey.Keys &&
				from.Valkey.Keys+to.Valkey.Keys == wasFrom.Valkey.Keys+wasTo.Valkey.Keys &&
				len(from.Valkey.OpenSlots) == 0 && len(to.Valkey.OpenSlots) == 0
		},
	},
	{
		Name: "add-node joins a node restarted on an empty volume (a new node) to every other on the cluster bus",
		Ghost: func(b machine.Observation) string {
			if n := follower(b, 1); n != nil {
				return n.Name
			}
			return "<shard 1 has no replica>"
		},
		Action: func(b machine.Observation) (machine.Action, error) {
			n := alone(b, 1)
			if n == nil {
				return nil, missing(b, "a node of shard 1 that knows no other")
			}
			return machine.AddNode{Target: machine.Target{Shard: 1, Node: n.Name, RunID: n.Valkey.RunID}}, nil
		},
		Effect: "every node knows the new node at its address, linked, and it knows every other node",
		Expect: func(b, a machine.Observation) bool {
			return everyoneKnows(a, same(a, alone(b, 1)))
		},
	},
	{
		Name: "forget-node removes a ghost (the old ID of a node restarted on an empty volume) from every node's view",
		Action: func(b machine.Observation) (machine.Action, error) {
			g := ghostOf(b)
			if g.ID == "" {
				return nil, fmt.Errorf("no ghost in any view: %s", Describe(b))
			}
			return machine.ForgetNode{ID: g.ID, IP: g.IP}, nil
		},
		Effect: "no node's view lists the ghost",
		Expect: func(b, a machine.Observation) bool {
			return knownBy(a, ghostOf(b).ID) == ""
		},
	},
	{
		Name: "take-slots-over gives a shard's slots to a node that serves none, with a newer claim the old owner yields to",
		Action: func(b machine.Observation) (machine.Action, error) {
			n, from := slotless(b, 1), owner(b, 1)
			if n == nil || from == nil {
				return nil, missing(b, "shard 1's primary and a primary of shard 1 serving no slots")
			}
			return machine.TakeSlotsOver{Target: machine.Target{Shard: 1, Node: n.Name, RunID: n.Valkey.RunID}, From: from.Name, FromRunID: from.Valkey.RunID, Slots: from.Valkey.Slots}, nil
		},
		// One SETSLOT per slot, in one bulk: on a loaded machine it can time out part way.
		Resumable: true,
		Effect: "the node of shard 1 that served none serves the slots its primary served, with an epoch above every other node's before, in its own view and shard 0's; " +
			"the old owner serves none and stays a primary (replica migration is off: it is not re-pointed)",
		Expect: func(b, a machine.Observation) bool {
			was := owner(b, 1)
			n, from, other := same(a, slotless(b, 1)), same(a, was), same(a, owner(b, 0))
			if n == nil || from == nil || !from.Reachable || other == nil || n.Valkey.ConfigEpoch <= maxEpochBesides(b, n.Valkey.NodeID) {
				return false
			}
			for _, r := range was.Valkey.Slots {
				if !serves(n, r.Start, r.End) || servesAny(from, r.Start, r.End) || !seesServing(other, n.Valkey.NodeID, r) {
					return false
				}
			}
			return from.Valkey.Role == machine.RolePrimary
		},
	},
	{
		Name: "replica-of in cluster mode makes a primary without slots a replica of its shard's primary",
		Action: func(b machine.Observation) (machine.Action, error) {
			n, p := slotless(b, 1), owner(b, 1)
			if n == nil || p == nil {
				return nil, missing(b, "shard 1's primary and a primary of shard 1 serving no slots")
			}
			return machine.ReplicaOf{Target: machine.Target{Shard: 1, Node: n.Name, RunID: n.Valkey.RunID}, Primary: p.Name, PrimaryIP: p.Pod.IP, PrimaryRunID: p.Valkey.RunID}, nil
		},
		// Not linked yet: the new owner started closed to replicas (sync fenced) and nothing
		// opened it.
		Effect: "the primary without slots a replica following shard 1's primary by its ID",
		Expect: func(b, a machine.Observation) bool {
			n, p := same(a, slotless(b, 1)), same(a, owner(b, 1))
			return n != nil && p != nil && n.Reachable && n.Valkey.Role == machine.RoleReplica && n.Valkey.PrimaryID == p.Valkey.NodeID
		},
	},
	{
		Name: "promote of a replica in cluster mode takes its primary's slots over with a newer claim",
		Action: func(b machine.Observation) (machine.Action, error) {
			n := follower(b, 1)
			if n == nil || owner(b, 1) == nil {
				return nil, missing(b, "shard 1's primary and its replica")
			}
			return machine.Promote{Target: machine.Target{Shard: 1, Node: n.Name, RunID: n.Valkey.RunID}}, nil
		},
		Effect: "shard 1's replica a primary serving the slots its primary served, with an epoch above every one before, in its own view and shard 0's; the old primary serves none",
		Expect: func(b, a machine.Observation) bool {
			was := owner(b, 1)
			n, old, other := same(a, follower(b, 1)), same(a, was), same(a, owner(b, 0))
			if was == nil || n == nil || old == nil || other == nil || n.Valkey.Role != machine.RolePrimary || n.Valkey.ConfigEpoch <= maxEpoch(b) {
				return false
			}
			for _, r := range was.Valkey.Slots {
				if !serves(n, r.Start, r.End) || servesAny(old, r.Start, r.End) || !seesServing(other, n.Valkey.NodeID, r) {
					return false
				}
			}
			return len(was.Valkey.Slots) > 0
		},
	},
	{
		Name: "remove-node takes a node serving no slots off the cluster bus: every other node forgets it and it forgets them",
		Action: func(b machine.Observation) (machine.Action, error) {
			n := idle(b, 1)
			if n == nil {
				return nil, missing(b, "a node of shard 1 serving no slots")
			}
			return machine.RemoveNode{Target: machine.Target{Shard: 1, Node: n.Name}}, nil
		},
		Effect: "no other node knows the node shard 1 removed; it knows none, serves nothing, keeps its ID and is a primary of no cluster",
		Expect: func(b, a machine.Observation) bool {
			was := idle(b, 1)
			n := same(a, was)
			return n != nil && n.Reachable && n.Valkey.NodeID == was.Valkey.NodeID && len(n.Valkey.Known) == 0 &&
				len(n.Valkey.Slots) == 0 && n.Valkey.Role == machine.RolePrimary && knownBy(a, was.Valkey.NodeID) == ""
		},
	},
}

// migrated are the slots the migrate-slots row moves: keys of both worlds hash into them.
var migrated = machine.SlotRange{Start: 0, End: 1023}

// RunCluster plays ClusterTable against w, reporting each row through report (nil: the row held).
func RunCluster(ctx context.Context, w ClusterWorld, report func(row Row, err error)) {
	o, err := w.Observe(ctx)
	if err == nil {
		err = clusterBefore(o)
	}
	if err != nil {
		report(Row{Name: "the world before the table"}, fmt.Errorf("want two shards of a primary and its replica, slots split in halves, keys in both: %v: %s", err, Describe(o)))
		return
	}
	for _, row := range ClusterTable {
		// Rows judge every node's view and pick nodes by what they answer: a node whose
		// survey timed out would look absent (forget-node would take its ID for a ghost's).
		if err := w.Await(ctx, "every node answers", everyNodeAnswers); err != nil {
			report(row, fmt.Errorf("before the row: %w", err))
			continue
		}
		report(row, play(ctx, w, row))
	}
}

// everyNodeAnswers: every node of the observation answers with its node ID.
func everyNodeAnswers(o machine.Observation) bool {
	for _, n := range o.Nodes {
		if !n.Reachable || n.Valkey.NodeID == "" {
			return false
		}
	}
	return len(o.Nodes) > 0
}

// clusterBefore says what the world before ClusterTable lacks (nil: nothing).
func clusterBefore(o machine.Observation) error {
	if o.Spec.Mode != machine.ModeCluster {
		return fmt.Errorf("mode %q", o.Spec.Mode)
	}
	for s := 0; s < 2; s++ {
		p, r := owner(o, s), follower(o, s)
		if p == nil || r == nil || r.Valkey.PrimaryID != p.Valkey.NodeID || p.Valkey.Keys == 0 {
			return fmt.Errorf("shard %d", s)
		}
	}
	if !serves(owner(o, 0), 0, machine.NumSlots/2-1) || !serves(owner(o, 1), machine.NumSlots/2, machine.NumSlots-1) {
		return fmt.Errorf("slots not split in halves")
	}
	return nil
}

// The nodes of a shard by what they are now. Rows find a node by role in the observation
// before and follow it by name (same) in the one after.

// owner is the shard's reachable primary that serves slots.
func owner(o machine.Observation, shard int) *machine.Node {
	return find(o, shard, func(n *machine.Node) bool { return n.Valkey.Role == machine.RolePrimary && len(n.Valkey.Slots) > 0 })
}

// slotless is the shard's reachable primary that serves no slots.
func slotless(o machine.Observation, shard int) *machine.Node {
	return find(o, shard, func(n *machine.Node) bool { return n.Valkey.Role == machine.RolePrimary && len(n.Valkey.Slots) == 0 })
}

// follower is the shard's reachable replica.
func follower(o machine.Observation, shard int) *machine.Node {
	return find(o, shard, func(n *machine.Node) bool { return n.Valkey.Role == machine.RoleReplica })
}

// idle is the shard's reachable node that serves no slots (a replica, or a primary without).
func idle(o machine.Observation, shard int) *machine.Node {
	return find(o, shard, func(n *machine.Node) bool { return len(n.Valkey.Slots) == 0 })
}

// alone is the shard's reachable node that knows no other node.
func alone(o machine.Observation, shard int) *machine.Node {
	return find(o, shard, func(n *machine.Node) bool { return len(n.Valkey.Known) == 0 })
}

func find(o machine.Observation, shard int, is func(*machine.Node) bool) *machine.Node {
	for i := range o.Nodes {
		if n := &o.Nodes[i]; n.Shard == shard && n.Reachable && is(n) {
			return n
		}
	}
	return nil
}

// missing is the error of a row whose action names a node the world does not have.
func missing(o machine.Observation, what string) error {
	return fmt.Errorf("no %s to act on: %s", what, Describe(o))
}

// same is the node called n in o (nil: none, or n is nil).
func same(o machine.Observation, n *machine.Node) *machine.Node {
	if n == nil {
		return nil
	}
	for i := range o.Nodes {
		if o.Nodes[i].Name == n.Name {
			return &o.Nodes[i]
		}
	}
	return nil
}

// serves: n reports serving every slot of [start, end] itself.
func serves(n *machine.Node, start, end int) bool {
	if n == nil || !n.Reachable {
		return false
	}
	for s := start; s <= end; s++ {
		if !inRanges(n.Valkey.Slots, s) {
			return false
		}
	}
	return true
}

// servesAny: n reports serving a slot of [start, end] itself.
func servesAny(n *machine.Node, start, end int) bool {
	if n == nil {
		return false
	}
	for s := start; s <= end; s++ {
		if inRanges(n.Valkey.Slots, s) {
			return true
		}
	}
	return false
}

// seesServing: viewer's view of the bus gives every slot of r to the node id.
func seesServing(viewer *machine.Node, id string, r machine.SlotRange) bool {
	if viewer == nil || !viewer.Reachable {
		return false
	}
	for _, k := range viewer.Valkey.Known {
		if k.ID == id {
			for s := r.Start; s <= r.End; s++ {
				if !inRanges(k.Ranges, s) {
					return false
				}
			}
			return true
		}
	}
	return false
}

func inRanges(rs []machine.SlotRange, slot int) bool {
	for _, r := range rs {
		if slot >= r.Start && slot <= r.End {
			return true
		}
	}
	return false
}

// knownBy is a reachable node whose view lists id ("": none).
func knownBy(o machine.Observation, id string) string {
	for _, n := range o.Nodes {
		if !n.Reachable {
			continue
		}
		for _, k := range n.Valkey.Known {
			if k.ID == id {
				return n.Name
			}
		}
	}
	return ""
}

// everyoneKnows: n and every other reachable node know each other at their addresses, linked.
func everyoneKnows(o machine.Observation, n *machine.Node) bool {
	if n == nil || !n.Reachable || n.Valkey.NodeID == "" {
		return false
	}
	links := func(viewer *machine.Node, other *machine.Node) bool {
		return slices.ContainsFunc(viewer.Valkey.Known, func(k machine.KnownNode) bool {
			return k.ID == other.Valkey.NodeID && k.IP == other.Pod.IP && k.Connected
		})
	}
	for i := range o.Nodes {
		m := &o.Nodes[i]
		if m.Name == n.Name || !m.Reachable {
			continue
		}
		if !links(m, n) || !links(n, m) {
			return false
		}
	}
	return true
}

// maxEpoch is the highest config epoch any node reports for itself or another.
func maxEpoch(o machine.Observation) uint64 {
	return maxEpochBesides(o, "")
}

// maxEpochBesides is the greatest epoch any node but id has or is known by: a node whose own
// epoch is above it already has the newest claim. A new node may have it before any claim
// (Valkey resolves two primaries' equal epochs by bumping one of them), so that it need not be
// above its own.
func maxEpochBesides(o machine.Observation, id string) uint64 {
	var e uint64
	for _, n := range o.Nodes {
		if n.Valkey.NodeID != id {
			e = max(e, n.Valkey.ConfigEpoch)
		}
		for _, k := range n.Valkey.Known {
			if k.ID != id {
				e = max(e, k.ConfigEpoch)
			}
		}
	}
	return e
}

// ghostOf is an ID some node's view lists that no node answers as.
func ghostOf(o machine.Observation) machine.KnownNode {
	live := map[string]bool{}
	for _, n := range o.Nodes {
		if n.Reachable {
			live[n.Valkey.NodeID] = true
		}
	}
	for _, n := range o.Nodes {
		for _, k := range n.Valkey.Known {
			if !live[k.ID] {
				return k
			}
		}
	}
	return machine.KnownNode{}
}
