package sim

import (
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// steadyCluster runs the cluster topology's operator until Steady and settled.
func steadyCluster(t *testing.T) *Sim {
	t.Helper()
	s := New(Topologies["cluster"], Options{Trace: true})
	s.Converge()
	if v := s.Violations(); len(v) > 0 || s.State().State != machine.Steady {
		t.Fatalf("no Steady cluster to start from: %v", v)
	}
	return s
}

// A replica restarted on its volume (nodes.conf kept, data lost without persistence) comes back
// on the bus as what it was: the same ID, a replica of its shard's primary, resyncing by itself;
// the operator only gives its client user back (replica-of takes the fast path).
func TestARestartedClusterReplicaComesBackAsWhatItWas(t *testing.T) {
	s := steadyCluster(t)
	w := s.w
	r, p := w.byName("s0-1"), w.byName("s0-0")
	id := r.id
	s.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultKillNode, Node: NodeRef{Shard: 0, Ordinal: 1}}})
	s.Step(Step{Kind: StepWrite, Write: Write{Key: 0}}) // a tick for the process to start
	if r.id != id || r.role != machine.RoleReplica || r.masterID != p.id || !r.linked {
		t.Fatalf("s0-1 came back as id %s (was %s), role %s, following %q (s0-0 is %s), linked %v", r.id, id, r.role, r.masterID, p.id, r.linked)
	}
	if !r.linkUp {
		t.Fatalf("s0-1 does not resync from s0-0 by itself")
	}
	s.Converge()
	if v := s.Violations(); len(v) > 0 {
		t.Fatal(v)
	}
}

// A node started on an empty volume is a new node: its old ID stays in the others' views as a
// ghost; the operator forgets it once the ghost serves nothing, and the new node joins.
func TestAnEmptyVolumeMakesANewNodeAndAGhostTheOperatorForgets(t *testing.T) {
	s := steadyCluster(t)
	w := s.w
	r := w.byName("s1-1")
	old := r.id
	s.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultEmptyRestart, Node: NodeRef{Shard: 1, Ordinal: 1}}})
	if r.id == old {
		t.Fatalf("s1-1 kept its ID %s on an empty volume", old)
	}
	if _, ok := w.ghosts[old]; !ok {
		t.Fatalf("the old ID %s is no ghost", old)
	}
	obs := w.observe(map[string]int{})
	seen := false
	for _, n := range obs.Nodes {
		for _, k := range n.Valkey.Known {
			seen = seen || k.ID == old
		}
	}
	if !seen {
		t.Fatalf("no node's view lists the old ID %s", old)
	}
	s.Converge()
	if v := s.Violations(); len(v) > 0 {
		t.Fatal(v)
	}
	for _, n := range w.nodes {
		if _, ok := n.peersAt[old]; ok {
			t.Fatalf("%s still knows the old ID %s after the operator settled", n.name, old)
		}
	}
	if !r.linked || r.role != machine.RoleReplica {
		t.Fatalf("the new s1-1 is not a linked replica: linked %v, role %s", r.linked, r.role)
	}
}

// A primary whose slots a node of its own shard id took over becomes that node's replica when
// it hears the claim; restarted from nodes.conf first (the start script removes the shard ids,
// so it has a new one), it stays a primary serving none, as Valkey 8.0 and 9.1 do
// (actuators/valkey/slotless_test.go).
func TestAPrimaryFollowsTheTakerOfItsSlotsOnlyWithItsShardID(t *testing.T) {
	for _, restarted := range []bool{false, true} {
		s := steadyCluster(t)
		w := s.w
		p, r := w.byName("s0-0"), w.byName("s0-1")
		if r.shardID != p.shardID {
			t.Fatalf("the replica s0-1 has shard id %d, its primary %d", r.shardID, p.shardID)
		}
		if restarted {
			w.fromNodesConf(p)
		}
		w.giveClaim(r)
		w.promote(r)
		w.gossip()
		switch {
		case p.claim != 0:
			t.Fatalf("restarted %v: s0-0 keeps its claim beside the newer one", restarted)
		case !restarted && (p.role != machine.RoleReplica || p.masterID != r.id):
			t.Fatalf("s0-0 is %s following %q after s0-1 (%s) took its slots over: want its replica", p.role, p.masterID, r.id)
		case restarted && p.role != machine.RolePrimary:
			t.Fatalf("s0-0, restarted with a new shard id, is %s following %q: want a primary serving none", p.role, p.masterID)
		}
	}
}
