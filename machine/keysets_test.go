package machine

import (
	"slices"
	"strings"
	"testing"
)

// withKeys is n with the hashes of its keys, as the survey reads them.
func withKeys(n Node, hashes ...uint64) Node {
	n.Valkey.KeyHashes = hashes
	return n
}

func TestCompareKeysNamesTheNodesHoldingEveryKey(t *testing.T) {
	other := withKeys(restarted(0, 1), 5)
	other.Name, other.Shard = "s1-0", 1
	nodes := []Node{
		withKeys(restarted(0, 3), 1, 2, 3),
		withKeys(restarted(1, 2), 1, 3),
		withKeys(restarted(2, 2), 3, 4),
		restarted(3, 2), // keys not read
		other,
	}
	CompareKeys(nodes)
	for _, c := range []struct {
		i      int
		within []string
	}{{0, nil}, {1, []string{"s0-0"}}, {2, nil}, {4, nil}} {
		if v := nodes[c.i].Valkey; !v.KeysCompared || !slices.Equal(v.KeysWithin, c.within) {
			t.Errorf("%s: compared %v, within %v; want within %v", nodes[c.i].Name, v.KeysCompared, v.KeysWithin, c.within)
		}
	}
	if nodes[3].Valkey.KeysCompared {
		t.Error("a node whose keys were not read was compared")
	}
	for _, n := range nodes {
		if n.Valkey.KeyHashes != nil {
			t.Errorf("%s keeps its key hashes past the comparison", n.Name)
		}
	}
}

// A deposed primary with more keys of its own off the line and the new primary with fewer,
// both restarted from their append-only files: key counts chose the deposed one; the keys
// show that neither holds the other's, and the bootstrap waits for the user.
func TestBootstrapOfNodesWhoseKeysForkedWaits(t *testing.T) {
	nodes := []Node{withKeys(restarted(0, 1), 11), withKeys(restarted(1, 7), 1, 2, 3, 4, 5, 6, 7)}
	CompareKeys(nodes)
	d := Decide(Persisted{}, obsAt(1, durableSpec(1), nodes...))
	if d.Transition != nil || len(actionsOf(d, "promote")) > 0 {
		t.Fatalf("elected between nodes whose keys forked: %+v %v", d.Transition, d.Actions)
	}
	if d.Waiting.Kind != WaitDataChoice || d.Waiting.Shard != 0 {
		t.Errorf("waiting %q (%s), want the data choice of shard 0", d.Waiting, d.Waiting.Kind)
	}
	if !strings.Contains(d.Waiting.Detail, "their keys compared") {
		t.Errorf("waiting %q does not say the keys were compared", d.Waiting)
	}
}

// A node whose keys hold every key of the other's is elected, and not by key count.
func TestBootstrapOfNodesWhoseKeysContainElectsTheHolder(t *testing.T) {
	nodes := []Node{withKeys(restarted(0, 2), 1, 2), withKeys(restarted(1, 3), 1, 2, 3)}
	CompareKeys(nodes)
	d := Decide(Persisted{}, obsAt(1, durableSpec(1), nodes...))
	if d.Transition == nil || d.Next.Shards[0].Primary != "s0-1" {
		t.Fatalf("want s0-1, holding every key of s0-0, elected: %+v waiting=%q", d.Transition, d.Waiting)
	}
	if why := d.Transition.Why; why.Kind != ReasonBootstrapElected || why.OverByKeys != "" {
		t.Errorf("the keys decided, the reason says key counts did: %+v", why)
	}
}

// A failover between two nodes restarted from their append-only files goes by their keys where
// they were read: the lost primary with more keys that lacks the replica's is not elected.
func TestAFailoverBetweenUnmeasuredNodesGoesByTheirKeys(t *testing.T) {
	p := steadyState()
	p.State, p.Op = FailingOver, Operation{Election: Election{Shard: 0, Lost: "s0-0", LostRunID: "run-0", Writer: "s0-0", WriterRunID: "run-0", LostHistory: History{ID: "h1"}, KnownFenced: true}}
	lost, other := fromAppendOnlyFile(0, 3), fromAppendOnlyFile(1, 1)
	lost.Valkey.RunID = "run-0-again"
	forked := []Node{withKeys(lost, 1, 2, 3), withKeys(other, 9)}
	CompareKeys(forked)
	if d := Decide(p, obsAt(20, durableSpec(1), forked...)); d.Transition != nil && d.Transition.Event == EventCandidateElected {
		t.Fatalf("elected %s between nodes whose keys forked", d.Next.Op.Election.Candidate)
	}
	held := []Node{withKeys(lost, 1, 2, 3), withKeys(other, 2)}
	CompareKeys(held)
	d := Decide(p, obsAt(20, durableSpec(1), held...))
	if d.Transition == nil || d.Transition.Event != EventCandidateElected || d.Next.Op.Election.Candidate != "s0-0" {
		t.Fatalf("want s0-0, holding every key of s0-1, elected: %s", d)
	}
	if d.Transition.Why.OverByKeys != "" {
		t.Errorf("the keys decided, the message says key counts did: %s", d.Transition.Message)
	}
}

// A primary open for writes whose history the record cannot place (a hand-over target nobody
// recorded) holds up the election until it is fenced; fenced, it is a candidate.
func TestAnOpenPrimaryOutsideTheElectionIsFencedFirst(t *testing.T) {
	p := steadyState()
	p.State, p.Op = FailingOver, Operation{Election: Election{Shard: 0, Lost: "s0-0", LostRunID: "run-0", Writer: "s0-0", WriterRunID: "run-0", LostHistory: History{ID: "h1"}, KnownFenced: true}}
	lost := fromAppendOnlyFile(0, 1)
	lost.Valkey.RunID = "run-0-again"
	target := node(1, RolePrimary, "h-handed-over", 3)
	target.Valkey.ReplID2, target.Valkey.SecondOffset, target.Valkey.Keys = "h-renamed", 2, 2
	d := Decide(p, obsAt(20, durableSpec(1), lost, target))
	if d.Transition != nil || len(actionsOf(d, "fence")) != 1 || d.Waiting.Kind != WaitOpenPrimaryUnplaced || d.Waiting.Detail != "s0-1" {
		t.Fatalf("want s0-1 fenced before the election: %s", d)
	}
	target.Valkey.WritesFenced = true
	d = Decide(p, obsAt(21, durableSpec(1), lost, target))
	if d.Transition == nil || d.Transition.Event != EventCandidateElected || d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("want s0-1, fenced, elected: %s", d)
	}
}
