package election

// Link is one continued history: its ID and End, the offset (exclusive) below which the data
// of the continuing history is that history's. Persisted in the record as machine.HistoryLink.
type Link struct {
	ID  string
	End int64
	// Restarted marks a continuing history whose offsets started again at 0 from data that
	// held this one up to End: a node restarted from its append-only file, elected by key
	// count (its fresh ID at offset 0 already held those writes). Every node of the
	// continuing history then holds this one up to End, whatever its own offset; across any
	// other link (a promotion, a rename) offsets run on, and a node at offset x of the
	// continuing history holds this one only up to min(x+1, End).
	Restarted bool
}

// WholeHistory is the End of a link whose child holds all of the parent history from its
// first offset on: the complete writer restarted from its append-only file counts from 0
// again under a fresh ID, yet holds every write of the history it had. Every other link
// comes from a promotion, where offsets run on: the child at offset x holds the parent up to
// min(x, End-1).
const WholeHistory = int64(1) << 62

// parentRef is a history's parent as a lineage knows it: the history it continued and the
// exclusive offset where it left it.
type parentRef struct {
	id  string
	end int64
	// restarted: the child's offsets started again at 0 (Link.Restarted).
	restarted bool
}

// linkBound is how far into a parent history a node reaches when it reaches the child up to
// bound (exclusive) and the link between them ends at end. Across a link whose child's
// offsets started again (restarted), the child's bound says nothing about the parent: every
// node of the child holds the parent up to end, however far it got in the child.
func linkBound(bound, end int64, restarted bool) int64 {
	if end == WholeHistory || restarted {
		return end
	}
	return min(bound, end)
}

// keyCountLink reports whether a link is a key-count election's: its child restarted from
// data the election weighed by key count against the parent (the complete writer's link
// holds the whole parent and is measured).
func keyCountLink(p parentRef) bool {
	return p.restarted && p.end != WholeHistory
}
