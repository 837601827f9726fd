package machine

import (
	"strings"
	"testing"
)

// electedInPlace is a cluster shard failing over from s0-0, out of sight, to s0-1, a primary
// already (elected in place: it kept its claim), promoted and serving replicas, writes still
// fenced; the old primary is known unable to write. The record says s0-0 claimed the shard's
// slots with epoch 7, which s0-1 never heard of (it was behind a partition when s0-0 took them
// over). claim is s0-1's config epoch.
func electedInPlace(claim uint64) (Persisted, Observation) {
	spec := testSpec(1)
	spec.Mode = ModeCluster
	old := unreachable(node(0, RolePrimary, "h0", 0), 5)
	c := node(1, RolePrimary, "h1", 10)
	c.Valkey.WritesFenced, c.Valkey.SyncFenced = true, false
	c.Valkey.Slots = []SlotRange{{Start: 0, End: NumSlots - 1}}
	c.Valkey.NodeID, c.Valkey.ConfigEpoch, c.Valkey.Joined = "id-s0-1", claim, true
	p := Persisted{State: FailingOver, Seq: 3, Since: at(0), Shards: []ShardRecord{{
		Primary: "s0-1", RunID: "run-1", History: History{ID: "h1"}, Epoch: 3, ClaimEpoch: 7, ClaimNode: "id-s0-0",
	}}, Op: Operation{Election: Election{Shard: 0, Lost: "s0-0", LostRunID: "run-0", Writer: "s0-0", WriterRunID: "run-0", LostHistory: History{ID: "h0"}, Candidate: "s0-1", ElectedAt: at(0), KnownFenced: true}}}
	return p, obsAt(5, spec, old, c)
}

// TestACandidateWithAnOlderClaimIsNotOpened: opened, s0-1 would take writes, and when s0-0's
// newer claim is heard again (the partition heals) it wins the slots back: those writes are lost
// (found by the simulator, regressions/cluster-promote-stale-claim.sched). The failover waits,
// says why, and asks s0-1 for a new epoch (Promote of a primary is CLUSTER BUMPEPOCH), which it
// gets above 7 only once it has heard of 7. With a claim above the recorded one the failover
// completes.
func TestACandidateWithAnOlderClaimIsNotOpened(t *testing.T) {
	for _, claim := range []uint64{5, 7} {
		p, obs := electedInPlace(claim)
		d := Decide(p, obs)
		if d.Transition != nil {
			t.Fatalf("claim %d: %s fired with a claim not newer than the recorded epoch 7", claim, d.Transition)
		}
		if got := actionsOf(d, "promote"); len(got) != 1 || got[0] != "promote s0-1" {
			t.Fatalf("claim %d: promote %v, want s0-1 asked for a new epoch (actions %v)", claim, got, d.Actions)
		}
		if len(actionsOf(d, "open-writes")) > 0 {
			t.Fatalf("claim %d: writes opened on a claim that would lose", claim)
		}
		if w := d.Waiting; w.Kind != WaitClaimNotNewest || w.Node != "s0-1" || !strings.Contains(w.Detail, "(epoch 7, recorded)") {
			t.Fatalf("claim %d: waiting %q, want the recorded claim named", claim, d.Waiting)
		}
	}
	p, obs := electedInPlace(8)
	d := Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventFailoverComplete {
		t.Fatalf("with epoch 8 want failover-complete, got %s", d)
	}
	if r := d.Next.Shards[0]; r.ClaimEpoch != 8 || r.ClaimNode != "id-s0-1" {
		t.Fatalf("the record keeps claim %d by %q, want s0-1's epoch 8", r.ClaimEpoch, r.ClaimNode)
	}
}

// TestANewerClaimInAViewHoldsTheCandidate: the record knows nothing newer, but a node that
// answers still has, in its view, another node claiming some of the candidate's slots with a
// newer epoch. That claim wins wherever it is heard: the candidate waits for its own newer one.
func TestANewerClaimInAViewHoldsTheCandidate(t *testing.T) {
	p, obs := electedInPlace(8)
	p.Shards[0].ClaimEpoch, p.Shards[0].ClaimNode = 0, ""
	other := node(0, RoleReplica, "h1", 10)
	other.Name, other.Shard, other.Pod.IP = "s1-0", 1, "10.0.1.1"
	other.Valkey.Known = []KnownNode{{ID: "id-elsewhere", IP: "10.0.9.9", Slots: 10, Ranges: []SlotRange{{Start: 100, End: 109}}, ConfigEpoch: 9}}
	obs.Nodes = append(obs.Nodes, other)
	d := Decide(p, obs)
	if d.Transition != nil || !strings.Contains(d.Waiting.Detail, "node id-elsew's on some of them (epoch 9, in s1-0's view)") {
		t.Fatalf("want the failover held by the newer claim in s1-0's view, got %s (waiting %q)", d, d.Waiting)
	}
}

// TestReplicationIgnoresClaimEpochs: outside cluster mode there are no claims; the record stays
// without one.
func TestReplicationIgnoresClaimEpochs(t *testing.T) {
	p, obs := electedInPlace(5)
	obs.Spec.Mode = ModeReplication
	d := Decide(p, obs)
	if d.Transition == nil || d.Transition.Event != EventFailoverComplete {
		t.Fatalf("replication: want failover-complete whatever the epochs, got %s", d)
	}
}

// takenOverFromAGhost is electedInPlace after the claim's node is gone for good: s0-0, which
// claimed the slots with epoch 7, restarted on an empty volume and answers as a new node; s0-1,
// promoted by a takeover that claimed nothing (it followed a node that had lost the slots
// already), serves no slots. Every view still gives them to the old ID, which nobody answers as.
func takenOverFromAGhost() (Persisted, Observation) {
	p, obs := electedInPlace(0)
	all := []SlotRange{{Start: 0, End: NumSlots - 1}}
	fresh := node(0, RolePrimary, "h-new", 0)
	fresh.Valkey.RunID, fresh.Valkey.NodeID, fresh.Valkey.Joined = "run-new", "id-new", true
	c := obs.Nodes[1]
	c.Valkey.Slots = nil
	ghost := KnownNode{ID: "id-s0-0", IP: "10.0.0.1", Slots: NumSlots, Ranges: all, ConfigEpoch: 7}
	fresh.Valkey.Known = []KnownNode{ghost, {ID: "id-s0-1", IP: c.Pod.IP, Connected: true}}
	c.Valkey.Known = []KnownNode{ghost, {ID: "id-new", IP: fresh.Pod.IP, Connected: true}}
	obs.Nodes = []Node{fresh, c}
	return p, obs
}

// TestAStrandedClaimGoesToTheCandidate: nothing will ever tell s0-1 of a claim newer than epoch
// 7 (found by the simulator: regressions/cluster-claim-epoch-never-heard.sched, which waited for
// good). Every node forgets the ghost and s0-1 is assigned its slots; writes stay fenced until
// no view knows the ghost any more (claimGone), and then until s0-1's claim is newer than every
// claim a view still shows.
func TestAStrandedClaimGoesToTheCandidate(t *testing.T) {
	p, obs := takenOverFromAGhost()
	d := Decide(p, obs)
	if d.Transition != nil || len(actionsOf(d, "open-writes")) > 0 {
		t.Fatalf("want no transition and writes fenced, got %s", d)
	}
	forget, assign := actionsOf(d, "forget-node"), actionsOf(d, "assign-slots")
	if len(forget) != 1 || !strings.Contains(forget[0], "id-s0-0") || len(assign) != 1 || !strings.Contains(assign[0], "s0-1") {
		t.Fatalf("forget %v assign %v: want id-s0-0 forgotten and its slots assigned to s0-1 (actions %v)", forget, assign, d.Actions)
	}
	// Not while the ghost could still be heard from, or its slots are not only its.
	for name, change := range map[string]func(*Observation){
		"a pod unheard":           func(o *Observation) { o.Nodes[0].Reachable, o.Nodes[0].Valkey = false, Valkey{} },
		"an idle claim":           func(o *Observation) { o.IdleClaims = []Claim{{Name: "s0-2", Shard: 0, Ordinal: 2}} },
		"a node follows it":       func(o *Observation) { o.Nodes[0].Valkey.Role, o.Nodes[0].Valkey.PrimaryID = RoleReplica, "id-s0-0" },
		"a process answers as it": func(o *Observation) { o.Nodes[0].Valkey.Known[0].Connected = true },
		"a newer epoch in a view": func(o *Observation) { o.Nodes[0].Valkey.Known[0].ConfigEpoch = 8 },
	} {
		p, obs := takenOverFromAGhost()
		change(&obs)
		if d := Decide(p, obs); len(actionsOf(d, "assign-slots")) > 0 || len(actionsOf(d, "forget-node")) > 0 {
			t.Fatalf("%s: want the ghost kept, got %v", name, d.Actions)
		}
	}
}

// TestATiedGhostClaimIsForgotten: s0-0 claimed the slots with epoch 7 behind a partition, as
// s0-1 did on the other side, then restarted on an empty volume. The tie is never broken (the
// ghost does not talk; BUMPEPOCH answers STILL to s0-1, whose epoch is the highest it knows):
// the ghost is forgotten, and once no view knows it, a recorded claim of its as old as s0-1's
// no longer holds the failover back. Not while a volume could still come back as it.
func TestATiedGhostClaimIsForgotten(t *testing.T) {
	tied := func() (Persisted, Observation) {
		p, obs := takenOverFromAGhost()
		obs.Nodes[1].Valkey.Slots, obs.Nodes[1].Valkey.ConfigEpoch = []SlotRange{{Start: 0, End: NumSlots - 1}}, 7
		p.Shards[0].ClaimNode = "id-s0-1"
		return p, obs
	}
	p, obs := tied()
	d := Decide(p, obs)
	if got := actionsOf(d, "forget-node"); d.Transition != nil || len(got) != 1 || !strings.Contains(got[0], "id-s0-0") || len(actionsOf(d, "assign-slots")) > 0 {
		t.Fatalf("want id-s0-0 forgotten and nothing else done, got %s", d)
	}
	p, obs = tied()
	p.Shards[0].ClaimNode = "id-s0-0"
	for i := range obs.Nodes {
		obs.Nodes[i].Valkey.Known = obs.Nodes[i].Valkey.Known[1:]
	}
	if d := Decide(p, obs); d.Transition == nil || d.Transition.Event != EventFailoverComplete {
		t.Fatalf("the tied claim forgotten everywhere: want failover-complete, got %s", d)
	}
	obs.IdleClaims = []Claim{{Name: "s0-2", Shard: 0, Ordinal: 2}}
	if d := Decide(p, obs); d.Transition != nil {
		t.Fatalf("an idle claim could come back as id-s0-0: want no transition, got %s", d)
	}
}
