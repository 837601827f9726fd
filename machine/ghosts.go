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
}

func (d *decider) ghosts() []ghostNode {
	if d.v.spec.Mode != ModeCluster {
		return nil
	}
	ids := map[string]bool{}
	seen := map[[2]int]bool{}
	for _, n := range d.obs.Nodes {
		if !n.Pod.Exists || !n.Reachable || n.Valkey.NodeID == "" {
			return nil
		}
		ids[n.Valkey.NodeID] = true
		seen[[2]int{n.Shard, n.Ordinal}] = true
	}
	// Every pod the objects ask for must be there and answering: one missing from the
	// observation (deleted while a scale-down waits, say) comes back on its claim as the
	// same node.
	for s := 0; s < d.obs.Objects.Shards; s++ {
		for o := 0; o <= d.obs.Objects.Replicas; o++ {
			if !seen[[2]int{s, o}] {
				return nil
			}
		}
	}
	openTo := map[string]bool{}
	for _, n := range d.obs.Nodes {
		for _, o := range n.Valkey.OpenSlots {
			openTo[o.Peer] = true
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
				g = &ghostNode{id: k.ID, ip: k.IP}
				byID[k.ID] = g
			}
			g.slots = max(g.slots, k.Slots)
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

// forgetGhosts asks every node to forget the ghosts without slots, and says which ghosts still
// serve slots.
func (d *decider) forgetGhosts(b *actionList) {
	var holding []string
	for _, g := range d.ghosts() {
		if g.live || g.open {
			// Not a ghost: a process answers as that node (one the user attached), or a
			// slot is open towards it (forgetting it would close the slot where its keys may
			// be: the open-slots wait names it).
			continue
		}
		if g.slots == 0 {
			b.add(ForgetNode{ID: g.id, IP: g.ip})
			continue
		}
		holding = append(holding, fmt.Sprintf("%s (last at %s) serves %d slot(s) in the view of %s", g.id, g.ip, g.slots, strings.Join(g.knownBy, ", ")))
	}
	if len(holding) > 0 {
		b.wait("node(s) that are no pod of this cluster still serve slots, not forgotten until a failover takes their slots: " + strings.Join(holding, "; "))
	}
}
