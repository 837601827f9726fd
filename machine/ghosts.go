package machine

import (
	"fmt"
	"sort"
	"strings"
)

// Ghosts are node IDs that some node of the cluster knows and no pod is: a pod that came back
// on an empty volume (its claim lost, deleted before a re-creation, or a new disk) is a new
// node with a new ID, and its old ID stays in every other node's nodes.conf, flagged fail, for
// ever. valkey-cli --cluster check then fails, and the old entry is one more "failure report"
// source for each node's view. A ghost is forgotten everywhere (ForgetNode) once no view gives
// it a slot (a failover, the operator's or gossip's, took them), and only while every pod of the
// cluster answers with its own ID: a pod not heard from could be that very node, coming back.
// A ghost that still serves slots is not forgotten (its slots would be served by nobody); the
// machine says so, and the failover rules decide who takes them.

// ghostNode is one ghost: its ID, where it was, the slots the widest view gives it, and who
// knows it.
type ghostNode struct {
	id, ip  string
	slots   int
	knownBy []string
	// live: some node has a bus link to it (a process answers as that ID: a node outside
	// the operator's pods, never a ghost); open: a slot is open towards its address.
	live, open bool
	// ranges are the slots of the view that gives it the most; epoch the newest claim any
	// view gives it.
	ranges []SlotRange
	epoch  uint64
	// followed: some node is its replica (CLUSTER NODES names it as that node's primary),
	// which can take its slots over.
	followed bool
}

// podIDs is the node IDs the pods answer with, when every pod answers with one.
func (d *decider) podIDs() (map[string]bool, bool) {
	ids := map[string]bool{}
	seen := map[[2]int]bool{}
	for _, n := range d.obs.Nodes {
		if !n.Pod.Exists || !n.Reachable || n.Valkey.NodeID == "" {
			return nil, false
		}
		ids[n.Valkey.NodeID] = true
		seen[[2]int{n.Shard, n.Ordinal}] = true
	}
	// Every pod the objects ask for, or the spec will, must be there and answering: one missing
	// from the observation (deleted while a scale-down waits, say, or not created yet by a
	// cluster re-created on kept claims whose objects grow back to the spec) comes back on its
	// claim as the same node, which must not be forgotten while it comes back.
	shards, replicas := max(d.obs.Objects.Shards, d.v.spec.Shards), max(d.obs.Objects.Replicas, d.v.spec.Replicas)
	for s := 0; s < shards; s++ {
		for o := 0; o <= replicas; o++ {
			if !seen[[2]int{s, o}] {
				return nil, false
			}
		}
	}
	return ids, true
}

func (d *decider) ghosts() []ghostNode {
	if d.v.spec.Mode != ModeCluster {
		return nil
	}
	ids, ok := d.podIDs()
	if !ok {
		return nil
	}
	openTo := map[string]bool{}
	followed := map[string]bool{}
	for _, n := range d.obs.Nodes {
		for _, o := range n.Valkey.OpenSlots {
			openTo[o.Peer] = true
		}
		if n.Valkey.Role == RoleReplica && n.Valkey.PrimaryID != "" {
			followed[n.Valkey.PrimaryID] = true
		}
	}
	byID := map[string]*ghostNode{}
	for _, n := range d.obs.Nodes {
		for _, k := range n.Valkey.Known {
			if ids[k.ID] {
				continue
			}
			g := byID[k.ID]
			if g == nil {
				g = &ghostNode{id: k.ID, ip: k.IP, followed: followed[k.ID]}
				byID[k.ID] = g
			}
			if k.Slots > g.slots {
				g.slots, g.ranges = k.Slots, k.Ranges
			}
			if k.Slots > 0 {
				g.epoch = max(g.epoch, k.ConfigEpoch)
			}
			g.live = g.live || k.Connected
			g.open = g.open || (k.IP != "" && openTo[k.IP])
			g.knownBy = append(g.knownBy, n.Name)
		}
	}
	out := make([]ghostNode, 0, len(byID))
	for _, g := range byID {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// claimedAsNew reports whether an answering primary serves every slot some view gives the
// ghost, with a claim at least as new. Views that give them to the ghost are then stale, or hold
// a tie that nothing else breaks: Valkey settles equal epochs between nodes that talk (the
// smaller ID takes the next one), but a ghost never talks, and a slot whose owner's claim is
// only as new as another's stays where each view has it. Claims made with the same epoch on
// both sides of a partition, one side's node since started on an empty volume, left a shard
// served by its primary in some views and by the dead ID in others for good (found by the
// simulator once epochs were per node). Forgotten, the ghost's slots go to the live claim.
func (d *decider) claimedAsNew(g ghostNode) bool {
	if g.epoch == 0 {
		return false
	}
	for i := range d.obs.Nodes {
		if n := &d.obs.Nodes[i]; n.Reachable && n.Valkey.Role == RolePrimary && g.coveredBy(n) {
			return true
		}
	}
	return false
}

// coveredBy reports whether n serves every slot some view gives g, with a claim at least as new.
func (g ghostNode) coveredBy(n *Node) bool {
	return n.Valkey.ConfigEpoch >= g.epoch && SlotCount(intersect(n.Valkey.Slots, g.ranges)) == SlotCount(g.ranges)
}

// servedSlots is the slots the answering primaries serve.
func (d *decider) servedSlots() []SlotRange {
	var served []SlotRange
	for _, n := range d.obs.Nodes {
		if n.Reachable && n.Valkey.Role == RolePrimary {
			served = append(served, n.Valkey.Slots...)
		}
	}
	return served
}

// stranded reports whether no node follows g and none of its slots is served by an answering
// primary (served): judged per ghost, a stale view of a ghost whose slots a live primary took
// is no stranded ghost, whatever another ghost leaves unserved.
func (g ghostNode) stranded(served []SlotRange) bool {
	return !g.followed && len(g.ranges) > 0 && SlotCount(g.ranges) == g.slots && !overlaps(g.ranges, served)
}

// intersect is the slots two lists of ranges share.
func intersect(a, b []SlotRange) []SlotRange {
	var out []SlotRange
	for _, x := range a {
		for _, y := range b {
			if lo, hi := max(x.Start, y.Start), min(x.End, y.End); lo <= hi {
				out = append(out, SlotRange{Start: lo, End: hi})
			}
		}
	}
	return out
}

// forgetGhosts asks every node to forget the ghosts without slots, and says which ghosts still
// serve slots.
//
// A ghost that serves slots no answering primary serves, and that no node follows, is stranded:
// no failover can ever take its slots (only a replica of it could), and its data went with its
// volume (a shard's new primary restarted on an empty volume right after its takeover, say:
// the old primary comes back, learns of the newer claim, and the slots stay with the dead ID).
// When exactly one recorded primary serves no slots and holds
// keys, the stranded slots' keys are its (the ghost took them over from it): every node forgets
// the ghost (Valkey then unassigns its slots) and that primary is assigned them, in one decision
// (the assignment is skipped if the forgetting fails). Free slots are never left for a
// resharding to hand out by its plan while a node holds their keys: they carry no trace of the
// shard that holds them. When no such primary holds keys, the keys went with the ghost's
// volume, and the ghost is forgotten for the plan to give its slots out (as at bootstrap,
// where slots are assigned by the plan). Otherwise the machine waits and names the ghost.
func (d *decider) forgetGhosts(p Persisted, steady bool, b *actionList) {
	var holding []string
	served := d.servedSlots()
	ghosts := d.ghosts()
	isStranded := func(g ghostNode) bool { return g.stranded(served) }
	stranded := 0
	for _, g := range ghosts {
		if !g.live && !g.open && g.slots > 0 && isStranded(g) {
			stranded++
		}
	}
	// The recorded primaries that serve no slots and hold keys: the stranded slots' keys are on
	// one of them (a shard a resharding adds starts empty).
	var holders []*Node
	for _, rec := range p.Shards {
		if prim := d.v.node(rec.Primary); alive(prim, rec.RunID) && prim.Valkey.Role == RolePrimary && len(prim.Valkey.Slots) == 0 && prim.Valkey.Keys > 0 {
			holders = append(holders, prim)
		}
	}
	for _, g := range ghosts {
		if g.live || g.open {
			// Not a ghost: a process answers as that node (one the user attached), or a
			// slot is open towards it (forgetting it would close the slot where its keys may
			// be: the open-slots wait names it).
			continue
		}
		if g.slots == 0 || d.claimedAsNew(g) {
			b.add(ForgetNode{ID: g.id, IP: g.ip})
			continue
		}
		switch s := isStranded(g); {
		case s && (!steady || len(holders) == 0):
			// No recorded primary without slots holds keys (or it is the bootstrap, whose
			// plan gives slots to the node elected for its data): the slots' keys are gone
			// with the ghost's volume, and forgetting frees them for the plan.
			b.add(ForgetNode{ID: g.id, IP: g.ip})
			continue
		case s && len(holders) == 1 && stranded == 1:
			// One stranded ghost, one primary without slots holding keys: they are the same
			// shard's. With several of either, which keys go with which slots is not known.
			prim := holders[0]
			b.add(ForgetNode{ID: g.id, IP: g.ip})
			b.add(AssignSlots{Target: TargetOf(prim.Shard, prim), Slots: g.ranges})
			continue
		case s && steady && ownerByKeySlots(g.ranges, holders) != nil:
			// Several: the one primary whose keys all hash to this ghost's slots holds them
			// (ghostkeys.go). A ghost whose slots hold no primary's keys waits until no
			// primary without slots holds keys, and is forgotten then (above).
			prim := ownerByKeySlots(g.ranges, holders)
			b.add(ForgetNode{ID: g.id, IP: g.ip})
			b.add(AssignSlots{Target: TargetOf(prim.Shard, prim), Slots: g.ranges})
			continue
		}
		why := "not forgotten until a failover takes them"
		if isStranded(g) {
			why = fmt.Sprintf("and no node follows it to take them over; %d such node(s) and %s serving no slots and holding keys: which one holds these slots' keys is not known (the key slots of each were not read, or do not fall in one such node's slots; give them by hand: CLUSTER FORGET %s on every node, then CLUSTER ADDSLOTSRANGE on that primary)", stranded, names(holders), g.id)
		}
		holding = append(holding, fmt.Sprintf("%s (last at %s) serves %d slot(s) in the view of %s, %s", g.id, g.ip, g.slots, strings.Join(g.knownBy, ", "), why))
	}
	if len(holding) > 0 {
		b.wait(Wait{Kind: WaitGhostsServeSlots, Detail: strings.Join(holding, "; ")})
	}
}
