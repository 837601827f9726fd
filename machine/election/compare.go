package election

// Candidate is a node that may be promoted, as the election compares it: where its data
// stands and what the machine knows about it beyond that.
type Candidate struct {
	Place
	// ByOffset: the node is trusted by offset (the lost primary restarted with its data, the
	// recorded hand-over target, or a node on its own whose history nobody can place).
	ByOffset bool
	// Unmeasured: restarted from its append-only file, its extent unknown (Lineage.Unmeasured).
	Unmeasured bool
	// Complete: the writer restarted from its own file with every write fsynced: it holds
	// every write of the line.
	Complete bool
	// Mark, when not nil, is what the node was deposed with: its key count may include writes
	// off the line.
	Mark *Mark
}

// Mark is what a deposed pod was deposed with: the elected node's place (Left: its history
// and offset + 1) and key count (Keys) at the election. Beyond them its data is off the line.
type Mark struct {
	Left Link
	Keys int64
}

// Holds reports whether c's data contains o's.
func (l Lineage) Holds(c, o Candidate) bool {
	h, _ := l.Compare(c, o)
	return h
}

// Compare reports whether c's data contains o's, and whether that rests on key counts. The
// complete writer holds every node of the recorded history (or older); no such node holds
// it. Beyond that an unmeasured node's extent is unknown (another unmeasured node may even
// be a writer a person handed over to behind the machine's back), and so is the distance
// between two nodes trusted by offset in different histories when nodes restart from
// append-only files: each such restart starts its offsets from 0 again, so an offset says how
// far a node got since the last restart of its history's origin, not along the shard's line
// (a replica of a restarted writer may hold more writes at a lower offset than a node of
// the older history). Key counts are then the only evidence left. More keys is not proof of
// more writes (an overwrite adds none, a delete removes one), which is why an election that
// needed them says so.
func (l Lineage) Compare(c, o Candidate) (holds, estimate bool) {
	holds, estimate = l.judge(c, o)
	// Of a deposed pod, c is said to hold only the line up to where the line left it (what
	// its volume holds beyond is off the line): that claim is the reach reachesLeft noted.
	if holds && o.Mark == nil {
		l.Note(Containment{Holder: c.RunID, Of: o.RunID, Estimate: estimate})
	}
	return holds, estimate
}

// judge is Compare without noting the claim.
func (l Lineage) judge(c, o Candidate) (holds, estimate bool) {
	switch {
	case o.Empty():
		return true, false
	case c.Complete && l.Recorded(o.Place):
		return true, false
	case o.Complete && l.Recorded(c.Place):
		return false, false
	case c.Empty():
		return false, false
	case c.Mark != nil || o.Mark != nil:
		return l.compareDeposed(c, o)
	case c.Unmeasured || o.Unmeasured:
		return c.Keys >= o.Keys, true
	case l.Covers(c.Place, o.Place):
		return true, false
	case l.UnmeasuredBetween(c.Place, o.Place):
		return c.Keys >= o.Keys, true
	case !c.ByOffset && !o.ByOffset:
		return false, false
	case l.offsetsRestart && c.ID != o.ID:
		return c.Keys >= o.Keys, true
	}
	return c.Offset >= o.Offset, false
}

// compareDeposed is Compare when c or o is a deposed pod restarted from its append-only file
// (Candidate.Mark): its data is the line up to where the line left it (at most the elected
// node's keys, Mark.Keys) and writes off the line. A deposed pod that resyncs and holds more
// keys than when it was asked to follow synced from the line and is no such candidate. One
// that holds no more may still have synced, from a line that held no more keys than it did,
// and restarted before the machine saw it on the line: it is taken for what it was deposed
// with (the alternative waits for good whenever such a pod holds more keys than the line's
// nodes). A write of the line that only it held would also have been on the primary it
// synced from, lost in turn: the third fault.
func (l Lineage) compareDeposed(c, o Candidate) (holds, estimate bool) {
	switch {
	case c.Mark != nil && o.Mark != nil:
		return c.Keys >= o.Keys, true
	case o.Mark != nil:
		m := o.Mark
		if l.reachesLeft(c.Place, m) {
			return true, false
		}
		return c.Keys >= min(o.Keys, m.Keys), true
	}
	m := c.Mark
	if l.reachesLeft(o.Place, m) && !l.Covers(Place{ID: m.Left.ID, Offset: m.Left.End - 1}, o.Place) {
		// o holds all of the line c may hold and writes of the line beyond: c lacks them.
		return false, false
	}
	return o.Keys <= min(c.Keys, m.Keys), true
}

// reachesLeft reports whether p's data holds the line up to where it left the deposed pod m.
func (l Lineage) reachesLeft(p Place, m *Mark) bool {
	return m.Left.ID != "" && l.Reaches(p, m.Left.ID, m.Left.End-1)
}
