package machine

import (
	"cmp"
	"slices"
	"strings"
)

// view indexes an observation for the guards and action builders. It is built once per
// Decide and never changed.
type view struct {
	spec   Spec
	nodes  []*Node
	shards [][]*Node // by shard number, each sorted by ordinal; may be longer than spec.Shards
}

func newView(obs Observation) *view {
	v := &view{}
	v.reset(obs)
	return v
}

// reset indexes obs into v, reusing the memory of v's slices (a pooled decider's view).
func (v *view) reset(obs Observation) {
	v.spec = normalizeSpec(obs.Spec)
	v.nodes = v.nodes[:0]
	for i := range obs.Nodes {
		v.nodes = append(v.nodes, &obs.Nodes[i])
	}
	slices.SortFunc(v.nodes, func(a, b *Node) int {
		if a.Shard != b.Shard {
			return cmp.Compare(a.Shard, b.Shard)
		}
		if a.Ordinal != b.Ordinal {
			return cmp.Compare(a.Ordinal, b.Ordinal)
		}
		return strings.Compare(a.Name, b.Name)
	})
	// Every shard slice the view ever had is kept, emptied, for the shards of this one.
	v.shards = v.shards[:cap(v.shards)]
	for i := range v.shards {
		v.shards[i] = v.shards[i][:0]
	}
	v.shards = v.shards[:0]
	for _, n := range v.nodes {
		if n.Shard < 0 {
			continue
		}
		for len(v.shards) <= n.Shard {
			if len(v.shards) < cap(v.shards) {
				v.shards = v.shards[:len(v.shards)+1]
			} else {
				v.shards = append(v.shards, nil)
			}
		}
		v.shards[n.Shard] = append(v.shards[n.Shard], n)
	}
}

// clear drops v's references to an observation's nodes, keeping the slices' memory for the
// next reset.
func (v *view) clear() {
	clear(v.nodes[:cap(v.nodes)])
	v.nodes = v.nodes[:0]
	v.shards = v.shards[:cap(v.shards)]
	for i, ns := range v.shards {
		clear(ns[:cap(ns)])
		v.shards[i] = ns[:0]
	}
	v.shards = v.shards[:0]
	v.spec = Spec{}
}

// normalizeSpec fills in what an unset field means, so guards need no special cases.
func normalizeSpec(s Spec) Spec {
	if s.Mode == "" {
		s.Mode = ModeReplication
	}
	if s.Mode == ModeReplication || s.Mode == ModeSentinel || s.Shards < 1 {
		s.Shards = 1
	}
	if s.Replicas < 0 {
		s.Replicas = 0
	}
	if s.MinSyncReplicas > s.Replicas {
		s.MinSyncReplicas = s.Replicas
	}
	if s.MinSyncReplicas < 0 {
		s.MinSyncReplicas = 0
	}
	if s.FailureThreshold < 1 {
		s.FailureThreshold = 1
	}
	return s
}

// node finds a node by name (nil when its pod is not observed at all).
func (v *view) node(name string) *Node {
	if name == "" {
		return nil
	}
	for _, n := range v.nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// shard returns the observed nodes of shard s, sorted by ordinal.
func (v *view) shard(s int) []*Node {
	if s < 0 || s >= len(v.shards) {
		return nil
	}
	return v.shards[s]
}

// shardCount is one more than the highest shard number with an observed pod.
func (v *view) shardCount() int {
	n := 0
	for s, nodes := range v.shards {
		if len(nodes) > 0 {
			n = s + 1
		}
	}
	return n
}

// byIP finds the node of a shard whose pod has the IP ("" matches nothing).
func (v *view) byIP(s int, ip string) *Node {
	if ip == "" {
		return nil
	}
	for _, n := range v.shard(s) {
		if n.Pod.IP == ip {
			return n
		}
	}
	return nil
}

// nodeByIP finds the node, of any shard, whose pod has the IP ("" matches nothing).
func (v *view) nodeByIP(ip string) *Node {
	for s := range v.shards {
		if n := v.byIP(s, ip); n != nil {
			return n
		}
	}
	return nil
}

// alive reports whether n is the very process runID and answers.
func alive(n *Node, runID string) bool {
	return n != nil && n.Reachable && n.Pod.Exists && n.Valkey.RunID == runID && !n.Valkey.Loading
}

// usable reports whether n answers and is not loading its data.
func usable(n *Node) bool {
	return n != nil && n.Reachable && n.Pod.Exists && !n.Valkey.Loading
}

// joined reports whether n is part of the cluster bus (cluster mode): it knows another node,
// or it is the only node there is (a cluster of one shard of one pod has no one to meet).
func (v *view) joined(n *Node) bool {
	return n.Valkey.Joined || len(v.nodes) == 1
}

// servesReplicas reports whether n is a master that lets replicas sync from it.
func servesReplicas(n *Node) bool {
	return usable(n) && n.Valkey.Role == RolePrimary && !n.Valkey.SyncFenced
}

// fenced reports whether a node observed now cannot accept client writes.
func fenced(n *Node) bool {
	return n.Valkey.Role != RolePrimary || n.Valkey.WritesFenced && !n.Valkey.OtherUsers
}

// follows reports whether n is a replica pointed at primary's current IP.
func follows(n, primary *Node) bool {
	return n.Valkey.Role == RoleReplica && primary.Pod.IP != "" && n.Valkey.PrimaryHost == primary.Pod.IP
}
