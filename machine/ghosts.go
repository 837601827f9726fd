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
}

func (d *decider) ghosts() []ghostNode {
	if d.v.spec.Mode != ModeCluster {
		return nil
	}
	ids := map[string]bool{}
	for _, n := range d.obs.Nodes {
		if !n.Pod.Exists || !n.Reachable || n.Valkey.NodeID == "" {
			return nil
		}
		ids[n.Valkey.NodeID] = true
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
