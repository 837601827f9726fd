package machine

import "fmt"

// The tie beside the slot owner (cluster mode). When nodes of a shard restart from their
// append-only files, nothing places their data in the shard's history (a fresh ID at offset
// 0): the election weighs them by key count, and equal counts are a tie nothing measured
// breaks. Among tied nodes the one serving the shard's slots with the newest claim is the one
// to keep: a primary without slots takes no client write (every key is another node's), and
// the one serving them refuses to follow anyone while it does. Kept on the node without
// slots, the shard waits for a user to empty a node that holds as much data as the elected
// one, or more; handed to the slot owner, nothing measured is lost either way.

// slotOwnerTied reports whether owner, a node of shard s serving the shard's slots with keys,
// is to replace n, the recorded primary serving none: the election, asked as a failover of n
// would ask it, finds each one's data holding the other's (a tie: by key count where nothing
// else tells, at equal counts), and owner's claim on the slots is the newest the machine knows
// of. Where the evidence says one holds more, it is not a tie: a stray holding more keys than
// the elected node (writes off the line, perhaps) stays the user's to settle (strayOwner),
// and the complete writer (it holds every write of the line) is never given up. Nor is n for
// a node whose data is to be replaced anyway (a deposed pod: strayOwner takes its slots over).
func (d *decider) slotOwnerTied(s int, rec ShardRecord, owner, n *Node) bool {
	if discarded(d.p, rec, owner) != "" {
		return false
	}
	if _, newest := d.claimNewest(d.p, s, owner); !newest {
		return false
	}
	op := Operation{Election: Election{Shard: s, Lost: rec.Primary, LostRunID: rec.RunID, LostHistory: rec.History, Writer: rec.Primary, WriterRunID: rec.RunID}}
	l, cands := d.candidates(op)
	var o, c *candidate
	for i := range cands {
		switch cands[i].Node {
		case owner:
			o = &cands[i]
		case n:
			c = &cands[i]
		}
	}
	if o == nil || c == nil || c.complete {
		return false
	}
	return l.holds(*o, *c) && l.holds(*c, *o)
}

// servesSlotsBefore orders two nodes of a shard whose data the evidence cannot tell apart: a
// node serving slots before one serving none, and of two serving slots the one with the newer
// claim (the higher config epoch wins where claims meet). decided is false when neither is
// preferred. Elected, the node without slots would wait for good: the one serving them
// refuses to follow anyone, and the operator does not empty a node with data.
func servesSlotsBefore(a, b *Node) (first, decided bool) {
	as, bs := len(a.Valkey.Slots) > 0, len(b.Valkey.Slots) > 0
	switch {
	case as != bs:
		return as, true
	case as && a.Valkey.ConfigEpoch != b.Valkey.ConfigEpoch:
		return a.Valkey.ConfigEpoch > b.Valkey.ConfigEpoch, true
	}
	return false, false
}

// outweighedAtBootstrap says why the data of n, a node of shard s that serves the shard's
// slots holding keys while first, the node a bootstrap elected for its data, serves none, is
// to be replaced by first's ("": it is not): the user named first to bootstrap from, or the
// election weighed every holder's data and
// found first's containing n's; client writes stay fenced until the bootstrap completes, so
// nothing changed since, and the comparison still says so. n then loses the slots to first's
// newer claim and resyncs from it, as a deposed pod does (strayOwner): waiting instead would
// wait for a user to empty a node whose data the shard keeps anyway.
func (d *decider) outweighedAtBootstrap(s int, first, n *Node) string {
	// While a node holds keys, the first node is one the election recorded (firstNode): no
	// free choice is made then. The record is not read here: the decision that records the
	// election asks for the same actions as the next one.
	if n.Valkey.Keys == 0 || len(first.Valkey.Slots) > 0 {
		return ""
	}
	if d.v.spec.BootstrapFrom == first.Name {
		// The user named first's data to win, and was shown n's as discarded
		// (ReasonBootstrapChosen): emptying n by hand is what they asked for already.
		return fmt.Sprintf("discarded by the user's choice of %s to bootstrap from (valkey.fsm.dev/bootstrap-from)", first.Name)
	}
	l := d.lineage(s, History{})
	if l.bootstrapCompare(first, n) == notContained {
		return ""
	}
	return fmt.Sprintf("outweighed at the bootstrap election (%s's data contains its own)", first.Name)
}
