package machine

import "testing"

// A node that knows a pod at the pod's old address must be introduced again (not joined); a
// node that knows an ID no pod has (a ghost) is joined all the same while every answering pod
// names its ID (the machine forgets the ghost; meeting cannot bring back a pod that does not
// answer), and not while a pod answers without its ID (the unknown ID may be that pod, at an
// address it no longer has).
func TestStaleAddressesMatchPeersByID(t *testing.T) {
	nodes := func() []Node {
		out := make([]Node, 3)
		for i := range out {
			out[i].Pod.IP = "127.0.0." + string(rune('1'+i))
			out[i].Reachable = true
			out[i].Valkey.NodeID = "id" + string(rune('0'+i))
			out[i].Valkey.Joined = true
		}
		for i := range out {
			for j := range out {
				if i != j {
					out[i].Valkey.Known = append(out[i].Valkey.Known, KnownNode{ID: out[j].Valkey.NodeID, IP: out[j].Pod.IP})
				}
			}
		}
		return out
	}
	joined := func(ns []Node) (out []bool) {
		for _, n := range ns {
			out = append(out, n.Valkey.Joined)
		}
		return out
	}
	ns := nodes()
	MarkStaleAddresses(ns)
	if got := joined(ns); !got[0] || !got[1] || !got[2] {
		t.Fatalf("all current: joined %v", got)
	}
	ns = nodes()
	ns[0].Valkey.Known[0].IP = "127.0.0.99" // node 0 knows node 1 at an old address
	MarkStaleAddresses(ns)
	if got := joined(ns); got[0] || !got[1] || !got[2] {
		t.Fatalf("node 0 knows node 1 at an old address: joined %v, want only node 0 not joined", got)
	}
	ns = nodes()
	ns[1].Valkey.Known = append(ns[1].Valkey.Known, KnownNode{ID: "ghost", IP: "127.0.0.98"})
	MarkStaleAddresses(ns)
	if got := joined(ns); !got[0] || !got[1] || !got[2] {
		t.Fatalf("a ghost known by node 1: joined %v, want all joined", got)
	}
	ns = nodes()
	ns[1].Valkey.Known = append(ns[1].Valkey.Known, KnownNode{ID: "ghost", IP: "127.0.0.98"})
	ns[2].Reachable, ns[2].Valkey.NodeID = false, ""
	MarkStaleAddresses(ns)
	if got := joined(ns); !got[1] {
		t.Fatalf("an unknown ID while node 2 does not answer (meeting cannot bring it back): joined %v, want node 1 joined", got)
	}
	ns = nodes()
	ns[1].Valkey.Known = append(ns[1].Valkey.Known, KnownNode{ID: "ghost", IP: "127.0.0.98"})
	ns[2].Valkey.NodeID = "" // answers, without naming its ID: the unknown ID may be it
	MarkStaleAddresses(ns)
	if got := joined(ns); got[1] {
		t.Fatalf("an unknown ID at a stale address while node 2 answers without its ID: joined %v, want node 1 not joined", got)
	}
}

// Two groups that formed apart (shard 1's nodes met each other through replica-of, and the
// add-node that should have joined them to the rest failed) are each linked, so each node
// counted as joined and nothing ever merged them: the bootstrap waited for gossip for ever
// (found by the simulator). Every node of both islands must be introduced again; a node linked
// to nobody (taken off the bus by a scale-down) is no reason to meet anyone.
func TestIslandsOnTheBusAreNotJoined(t *testing.T) {
	nodes := make([]Node, 5)
	for i := range nodes {
		nodes[i].Name = "n" + string(rune('0'+i))
		nodes[i].Pod.IP = "127.0.0." + string(rune('1'+i))
		nodes[i].Reachable = true
		nodes[i].Valkey.NodeID = "id" + string(rune('0'+i))
	}
	link := func(a, b int) {
		nodes[a].Valkey.Known = append(nodes[a].Valkey.Known, KnownNode{ID: nodes[b].Valkey.NodeID, IP: nodes[b].Pod.IP, Connected: true})
		nodes[b].Valkey.Known = append(nodes[b].Valkey.Known, KnownNode{ID: nodes[a].Valkey.NodeID, IP: nodes[a].Pod.IP, Connected: true})
		nodes[a].Valkey.Joined, nodes[b].Valkey.Joined = true, true
	}
	link(0, 1)
	link(0, 2)
	link(1, 2)
	link(3, 0) // n3 joins the main group: no island for it
	link(3, 1)
	link(3, 2)
	// n4 is off the bus: nobody knows it, it knows nobody.
	MarkStaleAddresses(nodes)
	for i := 0; i < 4; i++ {
		if !nodes[i].Valkey.Joined {
			t.Fatalf("%s not joined: one bus and a node off it is no island", nodes[i].Name)
		}
	}
	for i := range nodes {
		nodes[i].Valkey.Known, nodes[i].Valkey.Joined = nil, false
	}
	link(0, 1)
	link(2, 3)
	MarkStaleAddresses(nodes)
	for i := 0; i < 4; i++ {
		if nodes[i].Valkey.Joined {
			t.Fatalf("%s joined although the bus is two islands {n0,n1} {n2,n3}", nodes[i].Name)
		}
	}
}

// A replica whose primary came back on an empty volume at the same address still follows the
// old ID (Valkey refuses to forget it: "Can't forget my master"); as far as the machine is
// concerned it follows nothing, so that replica-of points it at the new node. The simulator
// found the operator trying forget-node for ever while the replica looked linked to the pod.
func TestAReplicaOfAnOldIDAtThePodsAddressFollowsNothing(t *testing.T) {
	nodes := []Node{
		{Name: "s0-0", Reachable: true, Pod: Pod{IP: "127.0.0.1"}, Valkey: Valkey{Role: RolePrimary, NodeID: "new"}},
		{Name: "s0-1", Reachable: true, Pod: Pod{IP: "127.0.0.2"}, Valkey: Valkey{Role: RoleReplica, NodeID: "r", PrimaryHost: "127.0.0.1", PrimaryID: "old", LinkUp: true, HeardFromPrimary: true}},
		{Name: "s0-2", Reachable: true, Pod: Pod{IP: "127.0.0.3"}, Valkey: Valkey{Role: RoleReplica, NodeID: "r2", PrimaryHost: "127.0.0.1", PrimaryID: "new", LinkUp: true}},
	}
	ReadClusterBus(nodes)
	if v := nodes[1].Valkey; v.PrimaryHost != "" || v.LinkUp || v.HeardFromPrimary {
		t.Fatalf("s0-1 follows the old ID and still counts as following the pod: %+v", v)
	}
	if v := nodes[2].Valkey; v.PrimaryHost != "127.0.0.1" || !v.LinkUp {
		t.Fatalf("s0-2 follows the pod's own ID and lost it: %+v", v)
	}
}
