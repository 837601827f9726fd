package machine

import (
	"slices"

	"github.com/valkey-fsm/valkey-operator/machine/election"
)

// Whose keys contain whose: the evidence a bootstrap weighs between nodes restarted from
// their append-only files, which keep the keys but no place in a replication history
// (docs/development/election.md, "Key sets").
//
// A node whose every key, with the same value and expiry, is held by another has nothing the
// other lacks: electing the other discards none of its writes. A key count cannot say so: a
// deposed primary's writes off the line add keys as a replica behind lacks them. Both worlds
// read the keys of the same nodes (those the survey digests: keys at offset 0, client writes
// fenced) and call CompareKeys before the machine decides, so that what the machine reads,
// and the journal keeps, is the comparison, not the keys.

// CompareKeys compares the key hashes of every two nodes of a shard whose keys were read,
// setting KeysCompared and KeysWithin, and drops the hashes. Each comparison is a merge of
// two sorted lists: with the survey's bound of 100,000 keys a node, a shard of n such nodes
// costs n(n-1) merges of at most 200,000 steps.
func CompareKeys(nodes []Node) {
	for i := range nodes {
		a := &nodes[i].Valkey
		if a.KeyHashes == nil {
			continue
		}
		a.KeysCompared = true
		a.KeysWithin = nil
		for j := range nodes {
			b := &nodes[j].Valkey
			if i != j && nodes[j].Shard == nodes[i].Shard && b.KeyHashes != nil && sortedSubset(a.KeyHashes, b.KeyHashes) {
				a.KeysWithin = append(a.KeysWithin, nodes[j].Name)
			}
		}
	}
	for i := range nodes {
		nodes[i].Valkey.KeyHashes = nil
	}
}

// sortedSubset reports whether every element of a (sorted) is in b (sorted).
func sortedSubset(a, b []uint64) bool {
	if len(a) > len(b) {
		return false
	}
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
		j++
	}
	return true
}

// keysContain reports whether c's keys contain o's, each with the same value; known is false
// unless the keys of both were compared.
func keysContain(c, o *Node) (contains, known bool) {
	if !c.Valkey.KeysCompared || !o.Valkey.KeysCompared {
		return false, false
	}
	return slices.Contains(o.Valkey.KeysWithin, c.Name), true
}

// noteKeys notes, for the simulator's oracle, that c's data contains o's as their keys show: a
// measured claim, checked against the data like any other (election.Containment).
func (l lineage) noteKeys(c, o *Node) {
	l.Note(election.Containment{Holder: c.Valkey.RunID, Of: o.Valkey.RunID})
}
