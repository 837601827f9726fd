package sim

import (
	"fmt"
	"slices"
	"sort"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The cluster bus (cluster mode), as each node's nodes.conf keeps it on the node's volume.
//
// Identity. A node has an ID. A process restarted, or a pod re-created on its claim, is the same
// node; a node started on an empty volume is a new one, and its old ID stays in the others' views
// as a ghost (flagged failed, keeping whatever slots it claimed) until the operator forgets it.
//
// Addresses. A node knows each other node at an address (peersAt). Two nodes are linked when one
// knows the other at its current address and they can talk; linked nodes share what they know at
// once (gossip is instant here), so a pod re-created on a new IP is found again while it still
// knows one peer's current address, and a node whose every known address changed (every pod
// re-created at once) is on nobody's bus until the operator introduces it again (add-node).
//
// Slots. A shard's slots (World.slots) are claimed by nodes with a config epoch (claim); the
// highest claim a node has heard of wins. A node drops a claim as soon as it is linked, directly
// or through others, to a higher one. Replica migration is off, so what it does then depends on
// the shard ids (node.shardID), as in Valkey's clusterUpdateSlotsConfigWith: a primary whose
// slots went to a node of its own shard id becomes that node's replica, and a replica whose
// primary lost its slots so follows the new owner; otherwise a primary stays a primary without
// slots that keeps its keys, and a replica keeps following it.

// ghost is a node ID no process has any more: where it was and what it claimed.
type ghost struct {
	shard, claim int
	ip           string
}

func (w *World) newNodeID() string { w.idSeq++; return fmt.Sprintf("id%04d", w.idSeq) }

// newShardID is a shard id no node had before (Valkey draws a random one).
func (w *World) newShardID() int { w.shardIDSeq++; return w.shardIDSeq }

// giveClaim gives n a claim on its shard's slots with a new epoch, made at its current address:
// one above the highest it has heard of, which behind a partition may be no higher than a claim
// made on the other side.
func (w *World) giveClaim(n *node) {
	n.current = max(n.current, n.claim) + 1
	n.claim = n.current
}

// bumpEpoch is CLUSTER BUMPEPOCH on a primary that claims slots: a new epoch unless its own is
// the highest it has heard of already (Valkey answers STILL).
func (w *World) bumpEpoch(n *node) {
	if n.claim > 0 && n.claim < n.current {
		n.current++
		n.claim = n.current
	}
}

func (w *World) byID(id string) *node {
	if id == "" {
		return nil
	}
	for _, n := range w.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

// bury keeps n's ID as a ghost: no process will answer as it again (its volume is gone).
func (w *World) bury(n *node) {
	if n.id == "" {
		return
	}
	if w.ghosts == nil {
		w.ghosts = map[string]ghost{}
	}
	w.ghosts[n.id] = ghost{shard: n.shard, claim: n.claim, ip: n.ip}
}

// freshIdentity makes n a new node on the bus: a new ID that knows nobody and claims nothing,
// a primary without slots (cluster mode refuses replicaof: that is how a node starts). Its old
// ID, if it had one, becomes a ghost.
func (w *World) freshIdentity(n *node) {
	if n.id != "" {
		w.bury(n)
		w.note("%s starts on an empty volume as a new node; its old ID %s stays in the others' views", n.name, n.id)
	}
	n.id, n.shardID = w.newNodeID(), w.newShardID()
	n.claim, n.current, n.masterID, n.peersAt, n.detached, n.lostTo = 0, 0, "", nil, false, ""
	n.role = machine.RolePrimary
}

// fromNodesConf restarts n as what its nodes.conf says it was: a primary while it claims slots
// (or follows nobody), else a replica of the node it followed, at the address it knows it by.
// The replication password is the configured one again (a Detach does not survive a restart).
// Its shard id is a new one: the pod's start script removed it from nodes.conf (a replica takes
// its primary's again on the bus).
func (w *World) fromNodesConf(n *node) {
	n.detached = false
	n.shardID = w.newShardID()
	if n.claim > 0 || n.masterID == "" {
		n.role = machine.RolePrimary
		return
	}
	n.role = machine.RoleReplica
	n.masterIP = n.peersAt[n.masterID]
}

// serves: n claims its shard's slots and the shard has some.
func (w *World) serves(n *node) bool {
	return n.claim > 0 && n.shard < len(w.slots) && len(w.slots[n.shard]) > 0
}

// linked: a and b have a bus link: one knows the other at its current address and they talk.
func (w *World) linked(a, b *node) bool {
	if a == b || !w.talk(a, b) {
		return false
	}
	return (a.peersAt[b.id] == b.ip && b.id != "") || (b.peersAt[a.id] == a.ip && a.id != "")
}

// claimOf is what the bus knows of id's claim: the live node's, or the ghost's.
func (w *World) claimOf(id string) (shard, claim int, isGhost bool) {
	if n := w.byID(id); n != nil {
		return n.shard, n.claim, false
	}
	if g, ok := w.ghosts[id]; ok {
		return g.shard, g.claim, true
	}
	return -1, 0, false
}

// gossip runs the bus to a fixed point: linked nodes share addresses, superseded claims are
// dropped, replicas of a primary that lost its slots follow the new owner.
func (w *World) gossip() {
	if w.topo.Mode != machine.ModeCluster {
		return
	}
	var live []*node
	for _, n := range w.nodes {
		if n.exists && n.id != "" {
			live = append(live, n)
			n.linked = false
		}
	}
	// Components of the link graph.
	comp := map[*node]int{}
	for i, n := range live {
		comp[n] = i
	}
	var find func(n *node) *node
	parent := map[*node]*node{}
	find = func(n *node) *node {
		for parent[n] != nil {
			n = parent[n]
		}
		return n
	}
	for i, a := range live {
		for _, b := range live[i+1:] {
			if w.linked(a, b) {
				a.linked, b.linked = true, true
				if ra, rb := find(a), find(b); ra != rb {
					parent[rb] = ra
				}
			}
		}
	}
	groups := map[*node][]*node{}
	for _, n := range live {
		if n.linked {
			r := find(n)
			groups[r] = append(groups[r], n)
		}
	}
	roots := make([]*node, 0, len(groups))
	for r := range groups {
		roots = append(roots, r)
	}
	sort.Slice(roots, func(i, j int) bool { return comp[roots[i]] < comp[roots[j]] })
	for _, r := range roots {
		w.share(groups[r])
	}
	// A replica connects to its primary at the address its view has for it now.
	for _, n := range live {
		if n.role == machine.RoleReplica && n.masterID != "" {
			if ip, ok := n.peersAt[n.masterID]; ok {
				n.masterIP = ip
			}
		}
	}
}

// busScratch holds share's maps between calls.
type busScratch struct {
	known map[string]string // node ID -> the address the group knows it at
	best  map[int]int       // shard -> highest claim heard of
	owner map[int]*node     // shard -> the live member holding it
}

// empty returns the scratch maps, empty.
func (b *busScratch) empty() (map[string]string, map[int]int, map[int]*node) {
	if b.known == nil {
		b.known, b.best, b.owner = map[string]string{}, map[int]int{}, map[int]*node{}
	}
	clear(b.known)
	clear(b.best)
	clear(b.owner)
	return b.known, b.best, b.owner
}

// share is one linked group agreeing: every member learns every address the group knows (a
// member's own address from the member), and the highest claim per shard.
func (w *World) share(group []*node) {
	known, best, owner := w.shared.empty()
	for _, n := range group {
		for id, ip := range n.peersAt {
			if _, ok := known[id]; !ok {
				known[id] = ip
			}
		}
	}
	for _, n := range group {
		known[n.id] = n.ip
	}
	// The claims the group can hear: its members' own, and the ghosts' (what the cluster last
	// heard from a node that no longer runs). A live node outside the group is not heard.
	current := 0 // the highest epoch the group has heard of
	for _, n := range group {
		best[n.shard] = max(best[n.shard], n.claim)
		current = max(current, n.current, n.claim)
	}
	for id := range known {
		if g, ok := w.ghosts[id]; ok && g.claim > best[g.shard] {
			best[g.shard] = g.claim
		}
		if g, ok := w.ghosts[id]; ok {
			current = max(current, g.claim)
		}
	}
	// Two live members claiming a shard's slots with the same epoch: Valkey's collision
	// handling gives the one with the smaller ID the next epoch, and its claim wins. Shards
	// are settled in order: each tie takes the next epoch, so a map's order would make the
	// same schedule end differently from run to run.
	shards := make([]int, 0, len(best))
	for s := range best {
		shards = append(shards, s)
	}
	slices.Sort(shards)
	for _, s := range shards {
		e := best[s]
		var tied []*node
		for _, n := range group {
			if n.shard == s && n.claim > 0 && n.claim == e {
				tied = append(tied, n)
			}
		}
		if len(tied) > 1 {
			sort.Slice(tied, func(i, j int) bool { return tied[i].id < tied[j].id })
			current++
			tied[0].claim = current
			best[s] = current
			w.note("%s and %s claim shard %d's slots with the same epoch; %s, the smaller ID, takes epoch %d", tied[0].name, tied[1].name, s, tied[0].name, current)
		}
	}
	// The claims of different shards on one epoch are parted the same way: Valkey's collision
	// handling is between any two primaries, whatever they serve, and the machine moves no
	// slot from a primary that shares its epoch until it is parted.
	var claimants []*node
	for _, n := range group {
		if n.claim > 0 && n.claim == best[n.shard] {
			claimants = append(claimants, n)
		}
	}
	sort.Slice(claimants, func(i, j int) bool {
		return claimants[i].claim < claimants[j].claim || (claimants[i].claim == claimants[j].claim && claimants[i].id < claimants[j].id)
	})
	for i := 0; i+1 < len(claimants); i++ {
		if n, o := claimants[i], claimants[i+1]; n.claim == o.claim {
			current++
			w.note("%s and %s claim their shards' slots with the same epoch %d; %s, the smaller ID, takes epoch %d", n.name, o.name, n.claim, n.name, current)
			n.claim = current
			best[n.shard] = current
		}
	}
	for _, n := range group {
		n.current = current
	}
	for _, n := range group {
		if n.claim > 0 && n.claim == best[n.shard] {
			owner[n.shard] = n
		}
	}
	for _, n := range group {
		// Nothing else holds a node's map: it is refilled in place.
		if n.peersAt == nil {
			n.peersAt = make(map[string]string, len(known))
		}
		clear(n.peersAt)
		for id, ip := range known {
			if id != n.id {
				n.peersAt[id] = ip
			}
		}
	}
	// A replica takes its primary's shard id from the primary's messages (a chain of replicas
	// settles within as many rounds as the group has members).
	for range group {
		changed := false
		for _, n := range group {
			if n.role != machine.RoleReplica || n.masterID == "" {
				continue
			}
			if m := w.byID(n.masterID); m != nil && m != n && m.shardID != n.shardID && slices.Contains(group, m) {
				n.shardID, changed = m.shardID, true
			}
		}
		if !changed {
			break
		}
	}
	for _, n := range group {
		if n.claim > 0 && n.claim < best[n.shard] {
			w.note("%s learns of a newer claim on shard %d's slots and drops its own (a primary without slots now)", n.name, n.shard)
			n.claim = 0
			o := owner[n.shard]
			switch {
			case o != nil && o.shardID == n.shardID:
				// The new owner is of its own shard id (its replica took the slots over while it
				// kept its id): Valkey makes it that node's replica (clusterUpdateSlotsConfigWith
				// with cluster-allow-replica-migration no; seen on 8.0 and 9.1, stopped or
				// restarted, on its address or a new one).
				n.role, n.masterID, n.masterIP, n.followedAt = machine.RoleReplica, o.id, o.ip, w.tick
				n.linkUp = false
				n.gen++
				// Its own replicas (a detached one too: nodes.conf still names it) follow o as
				// well: each of them sees its primary's slots go to o, of the same shard
				// (clusterUpdateSlotsConfigWith re-points a replica whose primary lost all its
				// slots to the sender). Without this a replica kept following a node that had
				// lost its slots, and its takeover claimed nothing.
				n.lostTo, n.lostAt = o.id, w.tick
				w.note("%s follows %s, the new owner of its slots, of its own shard id", n.name, o.name)
			case o != nil:
				// Otherwise (it restarted since the taker last heard it, and the start script
				// gave it a new shard id) it stays a primary without slots, keeping its keys as
				// 8.0 does (9.1 deletes the keys of the slots it lost).
				n.lostTo, n.lostAt = o.id, w.tick
			}
		}
	}
	// A replica whose primary lost its slots to another node while it followed it follows that
	// node if it has that node's shard id (Valkey's UPDATE handling, as for a primary above); a
	// replica pointed later at a primary without slots is left where it is.
	for _, n := range group {
		if n.role != machine.RoleReplica || n.masterID == "" {
			continue
		}
		var to string
		if m := w.byID(n.masterID); m != nil && m.claim == 0 && n.followedAt <= m.lostAt {
			to = m.lostTo
		} else if g, ok := w.ghosts[n.masterID]; ok && g.claim > 0 && g.claim < best[g.shard] && owner[g.shard] != nil {
			to = owner[g.shard].id
		}
		if o := w.byID(to); o != nil && o != n && o.claim > 0 && o.shard == n.shard && o.shardID == n.shardID {
			n.masterID, n.masterIP, n.followedAt = o.id, o.ip, w.tick
			w.note("%s follows %s, the new owner of its primary's slots", n.name, o.name)
		}
	}
}

// knownView is n's view of the other nodes, as CLUSTER NODES lists them: every ID it knows, at
// the address it knows it by, with the slots its claim has if no higher claim is known, and
// whether a process answers there as that ID.
func (w *World) knownView(n *node) []machine.KnownNode {
	best := map[int]int{}
	if n.claim > 0 {
		best[n.shard] = n.claim
	}
	for id := range n.peersAt {
		if shard, claim, _ := w.claimOf(id); claim > best[shard] {
			best[shard] = claim
		}
	}
	ids := make([]string, 0, len(n.peersAt))
	for id := range n.peersAt {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]machine.KnownNode, 0, len(ids))
	for _, id := range ids {
		k := machine.KnownNode{ID: id, IP: n.peersAt[id]}
		shard, claim, _ := w.claimOf(id)
		if claim > 0 && claim == best[shard] && shard < len(w.slots) {
			if p := w.byID(id); p == nil || p.role == machine.RolePrimary {
				k.Slots = count(w.slots[shard])
				k.Ranges = append([]machine.SlotRange(nil), w.slots[shard]...)
				k.ConfigEpoch = uint64(claim)
			}
		}
		if p := w.byID(id); p != nil && p.ip == k.IP && w.talk(n, p) {
			k.Connected = true
		}
		out = append(out, k)
	}
	return out
}

// ownerInView names another ID that, in n's view, serves slots of ranges ("" if none does).
func (w *World) ownerInView(n *node, ranges []machine.SlotRange) string {
	for _, k := range w.knownView(n) {
		for _, r := range k.Ranges {
			for _, q := range ranges {
				if r.Start <= q.End && q.Start <= r.End {
					return k.ID
				}
			}
		}
	}
	return ""
}

// slotsSeen is how many slots n's view (known, knownView's) gives an owner, and whether every
// owner answers (cluster state ok: every slot served by a node that is not failed).
func (w *World) slotsSeen(n *node, known []machine.KnownNode) (int, bool) {
	ok := true
	seen := 0
	shards := map[int]bool{}
	if n.claim > 0 && n.role == machine.RolePrimary {
		shards[n.shard] = true
	}
	for _, k := range known {
		if k.Slots == 0 {
			continue
		}
		shard, _, _ := w.claimOf(k.ID)
		if !shards[shard] {
			shards[shard] = true
			ok = ok && k.Connected
		}
	}
	for s := range shards {
		if s < len(w.slots) {
			seen += count(w.slots[s])
		}
	}
	return seen, ok && seen == machine.NumSlots
}

// forget is CLUSTER FORGET id on every node the operator reaches (ForgetNode, and the first half
// of remove-node). With leavers (remove-node, as the real actuator), a replica of id is left
// alone rather than refusing: it leaves with its primary.
func (w *World) forget(id, except string, leavers bool) error {
	for _, m := range w.nodes {
		if !m.exists || m.name == except || !w.operatorTalks(m) {
			continue
		}
		if m.id == id {
			return fmt.Errorf("%s: I tried hard but I can't forget myself", m.name)
		}
		if m.masterID == id && m.role == machine.RoleReplica {
			if leavers {
				continue
			}
			return fmt.Errorf("%s: can't forget my master", m.name)
		}
		delete(m.peersAt, id)
	}
	if g, isGhost := w.ghosts[id]; isGhost {
		stillKnown := false
		for _, m := range w.nodes {
			_, ok := m.peersAt[id]
			stillKnown = stillKnown || ok
		}
		if !stillKnown {
			delete(w.ghosts, id)
			w.unclaimed(g.shard)
		}
	}
	return nil
}

// unclaimed frees shard s's slots once no node and no ghost claims them any more: Valkey
// unassigns a forgotten node's slots, and a reset node gives its own up.
func (w *World) unclaimed(s int) {
	if s < 0 || s >= len(w.slots) || len(w.slots[s]) == 0 {
		return
	}
	for _, n := range w.nodes {
		if n.shard == s && n.claim > 0 {
			return
		}
	}
	for _, g := range w.ghosts {
		if g.shard == s && g.claim > 0 {
			return
		}
	}
	w.note("shard %d's slots %v are free: no node claims them any more", s, w.slots[s])
	for len(w.freed) <= s {
		w.freed = append(w.freed, nil)
	}
	w.freed[s] = mergeRanges(append(w.freed[s], w.slots[s]...))
	w.slots[s] = nil
	w.slotsVersion++
}
