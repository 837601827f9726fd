package machine

// The observer's reading of the cluster bus, shared by the operator's observer and the
// simulator's, so that both worlds hand the machine the same notion of "joined" and of whom a
// replica follows.

// ReadClusterBus completes a cluster-mode observation from the nodes' own views: nodes that
// must be introduced again are not joined (MarkStaleAddresses), and a replica that follows a
// node ID other than the one the pod at its primary's address answers with follows nothing.
// That happens when a primary comes back on an empty volume at the same address (a new ID):
// its replicas still follow the old ID, their replication link may even reach the new node by
// address, but Valkey refuses to forget a replica's own primary, so the ghost stays until the
// replica is pointed at the new node (replica-of, which the machine decides for a replica that
// follows nothing).
func ReadClusterBus(nodes []Node) {
	MarkStaleAddresses(nodes)
	idAt := map[string]string{}
	for _, n := range nodes {
		if n.Reachable && n.Pod.IP != "" && n.Valkey.NodeID != "" {
			idAt[n.Pod.IP] = n.Valkey.NodeID
		}
	}
	for i := range nodes {
		v := &nodes[i].Valkey
		if v.Role != RoleReplica || v.PrimaryID == "" || v.PrimaryHost == "" {
			continue
		}
		if id, ok := idAt[v.PrimaryHost]; ok && id != v.PrimaryID {
			v.PrimaryHost, v.LinkUp, v.HeardFromPrimary = "", false, false
		}
	}
}

// MarkStaleAddresses marks as not joined every node that knows a pod only at an address the pod
// no longer has: after pods are re-created with new IPs (all at once included), a node comes
// back from nodes.conf knowing its peers where nobody answers, gossip alone may never find
// them, and it still counts as linked if one peer reached it. add-node then meets the pods'
// current IPs, and Valkey moves the known node to its new address when the handshake names it.
// Peers are matched by node ID: an ID that no pod has (a ghost, the old ID of a pod that came
// back on an empty volume) is no reason to meet anyone (meeting cannot bring it back); the
// machine forgets it. A peer whose pod's ID is not known (the pod does not answer) is matched
// by address, as before IDs were read: an address no pod has is stale.
//
// A node linked to others that does not know an answering pod that is linked to others too is
// on an island: two groups formed apart (a shard's nodes meet each other when a replica is
// pointed at its primary, and the add-node that should have joined them to the rest failed).
// Gossip never merges islands; add-node does. A pod linked to nobody (one a scale-down took off
// the bus) is no reason to meet anyone.
func MarkStaleAddresses(nodes []Node) {
	linked := make([]bool, len(nodes))
	for i, n := range nodes {
		for _, k := range n.Valkey.Known {
			linked[i] = linked[i] || k.Connected
		}
	}
	defer markIslands(nodes, linked)
	current := map[string]bool{}
	ipOf := map[string]string{}
	for _, n := range nodes {
		if n.Pod.IP != "" {
			current[n.Pod.IP] = true
		}
		if n.Reachable && n.Valkey.NodeID != "" {
			ipOf[n.Valkey.NodeID] = n.Pod.IP
		}
	}
	// Every answering pod named its ID: an unknown ID is then no pod that answers (meeting
	// cannot bring back one that does not answer).
	everyID := true
	for _, n := range nodes {
		everyID = everyID && (!n.Reachable || n.Valkey.NodeID != "")
	}
	for i := range nodes {
		for _, k := range nodes[i].Valkey.Known {
			ip, isPod := ipOf[k.ID]
			switch {
			case isPod && ip != k.IP:
				nodes[i].Valkey.Joined = false
			case !isPod && !everyID && !current[k.IP]:
				nodes[i].Valkey.Joined = false
			}
		}
	}
}

// markIslands marks as not joined each linked node that does not know some other answering,
// linked pod by ID (see MarkStaleAddresses).
func markIslands(nodes []Node, linked []bool) {
	for i := range nodes {
		if !linked[i] {
			continue
		}
		knows := map[string]bool{}
		for _, k := range nodes[i].Valkey.Known {
			knows[k.ID] = true
		}
		for j, p := range nodes {
			if j != i && linked[j] && p.Reachable && p.Valkey.NodeID != "" && !knows[p.Valkey.NodeID] {
				nodes[i].Valkey.Joined = false
				break
			}
		}
	}
}
