package machine

import (
	"sort"
	"strings"
)

// How a bootstrap weighs two nodes that hold keys: whether the data of one contains the
// other's, and on what evidence.

// containment is what the evidence says about whether a node's data contains another's.
type containment int

const (
	// notContained: it does not, or nothing shows it does and the evidence says it may not.
	notContained containment = iota
	// containedByHistory: its place in a replication history covers the other's.
	containedByHistory
	// sameData: both hold as many keys and their data digests are equal: the same data.
	sameData
	// containedByKeyCount: it holds at least as many keys, and nothing better is known.
	containedByKeyCount
	// containedByKeys: it holds every key of the other with the same value (keysets.go).
	containedByKeys
)

// containsAll is the node of shard s whose data contains every other holder's, trying the
// most keys first (then the highest offset, then a node serving the shard's slots with the
// newest claim: servesSlotsBefore, then the lowest ordinal), with the holders it was
// found to hold the same data as (same) and those it was preferred to by key count alone
// (byKeys). ok is false when no node's data contains all the others'.
func (d *decider) containsAll(s int, holders []*Node) (c *Node, same, byKeys []*Node, ok bool) {
	l := d.lineage(s, History{})
	cands := make([]*Node, len(holders))
	copy(cands, holders)
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.Valkey.Keys != b.Valkey.Keys {
			return a.Valkey.Keys > b.Valkey.Keys
		}
		if a.Valkey.Offset != b.Valkey.Offset {
			return a.Valkey.Offset > b.Valkey.Offset
		}
		if first, decided := servesSlotsBefore(a, b); decided {
			return first
		}
		return a.Ordinal < b.Ordinal
	})
	for _, c := range cands {
		if same, byKeys, ok := l.containsEach(c, holders); ok {
			return c, same, byKeys, true
		}
	}
	return nil, nil, nil, false
}

// containsEach reports whether c's data contains every other holder's, and which of them it
// holds the same data as, and which it contains by key count alone.
func (l lineage) containsEach(c *Node, holders []*Node) (same, byKeys []*Node, ok bool) {
	for _, o := range holders {
		if o == c {
			continue
		}
		switch l.bootstrapCompare(c, o) {
		case notContained:
			return nil, nil, false
		case containedByKeyCount:
			byKeys = append(byKeys, o)
		case sameData:
			same = append(same, o)
		}
	}
	return same, byKeys, true
}

// bootstrapCompare says whether c's data contains o's (both hold keys). Nodes that report a
// place in a replication history are compared by it; a node restarted from its append-only
// file reports none (a fresh ID at offset 0), and then only its key count and, where the
// survey took one, its data digest tell anything. Two nodes in histories that neither
// contains hold forked data: neither contains the other.
//
// What a digest proves: equal digests (of one kind) are the same data, so either node
// contains the other's. Different digests prove only that the data differ, not which holds
// more: a digest of a prefix of a history says nothing about the whole. So
//   - equal key counts, different digests: neither contains the other. With as many keys and
//     different data each holds something the other lacks (or the same keys with values one
//     of them overwrote, which cannot be told apart); electing either may discard the
//     other's acknowledged writes, and the operator does not destroy data to make progress:
//     the shard waits for the user to name the pod whose data wins.
//   - different key counts: the larger contains the smaller by key count, as without
//     digests. More keys do not prove containment (the smaller may hold keys the larger
//     lacks), but the usual reason for fewer keys after a stop is a replica that had not
//     received the last writes, where the larger is right, and a digest cannot tell that
//     prefix from a fork. Waiting there would hold every re-created cluster whose pods
//     stopped with a replica behind until a person chose; the message says the choice
//     rested on key counts.
//   - a digest unknown (not taken, past the survey's bound, or of another kind): key counts
//     alone, as before digests, and the message says so.
//
// Where the keys of both were compared (keysets.go) they decide instead, before digests and
// key counts: c contains o when it holds every key of o with the same value, and otherwise
// not, whatever the counts. That waits for a person where key counts chose a deposed
// primary's writes off the line over a replica's acknowledged ones.
func (l lineage) bootstrapCompare(c, o *Node) containment {
	cm, om := c.Valkey.Offset > 0, o.Valkey.Offset > 0
	switch {
	case cm && om && l.covers(c.Valkey, o.Valkey):
		return containedByHistory
	case cm && om:
		return notContained
	}
	if contains, known := keysContain(c, o); known {
		if contains {
			l.noteKeys(c, o)
		}
		back, _ := keysContain(o, c)
		return keysContainment(contains, back)
	}
	equal, known := sameDigest(c.Valkey.Digest, o.Valkey.Digest)
	switch {
	case known && equal && c.Valkey.Keys == o.Valkey.Keys:
		return sameData
	case known && !equal && c.Valkey.Keys == o.Valkey.Keys:
		return notContained
	case c.Valkey.Keys >= o.Valkey.Keys:
		return containedByKeyCount
	}
	return notContained
}

// sameDigest compares two data digests: known is false when either is unknown or they are of
// different kinds (the part before the first colon), which cannot be compared.
func sameDigest(a, b string) (equal, known bool) {
	ka, _, oka := strings.Cut(a, ":")
	kb, _, okb := strings.Cut(b, ":")
	if a == "" || b == "" || !oka || !okb || ka != kb {
		return false, false
	}
	return a == b, true
}

// differentDataTied lists the nodes that hold as many keys as another node with data of a
// different digest: pairs of which neither contains the other's (see bootstrapCompare).
func differentDataTied(holders []*Node) []*Node {
	var out []*Node
	for _, a := range holders {
		for _, b := range holders {
			if a == b || a.Valkey.Keys != b.Valkey.Keys || a.Valkey.Offset > 0 && b.Valkey.Offset > 0 {
				continue
			}
			if equal, known := sameDigest(a.Valkey.Digest, b.Valkey.Digest); known && !equal {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// keysContainment is the containment a comparison of keys proves: contains, c's keys hold
// o's; back, o's hold c's (both: the same data).
func keysContainment(contains, back bool) containment {
	switch {
	case contains && back:
		return sameData
	case contains:
		return containedByKeys
	}
	return notContained
}

// keysForked says, for the wait of a shard whose holders none contains all the others', that
// their keys were compared ("" when no two were): the wait is then no guess.
func keysForked(holders []*Node) string {
	compared := 0
	for _, n := range holders {
		if n.Valkey.KeysCompared {
			compared++
		}
	}
	if compared < 2 {
		return ""
	}
	return ", their keys compared: none holds every key of the others with the same value"
}
