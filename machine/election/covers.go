package election

// Covers reports whether b's data contains all of a's: a could continue from b by partial
// resync, following the chain of continued histories the lineage knows (a node restarted
// from its data reports only its current ID, but the record or another node may still say
// where that ID came from). An empty node (offset 0, no keys) is contained in anything; a
// node at offset 0 with keys holds its history's starting data. A node that switched to
// a new ID but has written nothing since (Offset == PrevEnd-1: promoted and still
// fenced, say) is judged by the history it continues.
func (l Lineage) Covers(b, a Place) bool {
	if a.Empty() {
		return true
	}
	ok, estimated := l.covering(b, a)
	if ok {
		l.Note(Containment{Holder: b.RunID, Of: a.RunID, Estimate: estimated})
	}
	return ok
}

// covering is Covers for a node with data, and whether the answer crossed a key-count link.
func (l Lineage) covering(b, a Place) (ok, estimated bool) {
	if ok, estimated := l.reach(b, a.ID, a.Offset); ok {
		return true, estimated
	}
	if a.PrevID != "" && a.Offset == a.PrevEnd-1 {
		if ok, estimated := l.reach(b, a.PrevID, a.Offset); ok {
			return true, estimated
		}
	}
	// A node still at the point where its history continued the parent (by promotion: offsets
	// run on) holds none of its own history's writes, only the parent's up to there, whether
	// or not it reports the parent (a primary that renamed its history on its first replica's
	// sync does not).
	if p, ok := l.parents[a.ID]; ok && !p.restarted && p.end != WholeHistory && a.Offset == p.end-1 {
		return l.reach(b, p.id, a.Offset)
	}
	return false, false
}

// Reaches reports whether b's data contains history id up to offset pos, walking up from
// b's history through the histories each continued.
func (l Lineage) Reaches(b Place, id string, pos int64) bool {
	ok, _ := l.reach(b, id, pos)
	return ok
}

// reach is Reaches, noting the claim, and whether the walk crossed a key-count link (whose
// end an election estimated by key count).
func (l Lineage) reach(b Place, id string, pos int64) (ok, estimated bool) {
	s, found := l.line(b).find(id)
	if !found || pos > s.limit {
		return false, false
	}
	l.Note(Containment{Holder: b.RunID, ID: id, Through: pos, Estimate: s.estimated})
	return true, s.estimated
}

// lineStep is one history on a node's line: the last offset of it the node holds, the
// history the walk came up from ("" for the node's own) and the link it took.
type lineStep struct {
	id    string
	limit int64
	from  string
	link  parentRef
	// estimated: the walk crossed a key-count link on the way here.
	estimated bool
}

type nodeLine []lineStep

// line lists the histories b's data belongs to, its own first, then each one the previous
// continued, as far as b's own report and the lineage's parents say.
func (l Lineage) line(b Place) nodeLine {
	var out nodeLine
	step := lineStep{id: b.ID, limit: b.Offset}
	for depth := 0; depth < 16 && step.id != ""; depth++ {
		out = append(out, step)
		var up parentRef
		if depth == 0 && b.PrevID != "" {
			up = parentRef{id: b.PrevID, end: b.PrevEnd}
		} else {
			p, ok := l.parents[step.id]
			if !ok {
				break
			}
			up = p
		}
		step = lineStep{id: up.id, limit: linkBound(step.limit+1, up.end, up.restarted) - 1, from: step.id, link: up, estimated: step.estimated || keyCountLink(up)}
	}
	return out
}

func (ln nodeLine) find(id string) (lineStep, bool) {
	for _, s := range ln {
		if s.id == id {
			return s, true
		}
	}
	return lineStep{}, false
}

// UnmeasuredBetween reports whether what one of c and o holds beyond the other's data may lie
// in the unmeasured start of a key-count link (Link.Restarted, not the complete writer's):
// the link says its child's data at offset 0 held the parent up to End, and beyond that an
// unknown further part of the shard's line. So for a node that left the parent at End or
// later by another way (a hand-over behind the machine's back), or is still in it, ahead:
//   - a node whose line crosses the link may hold it (it may have followed, before its
//     restart, a node that held writes the link cannot name);
//   - a node of the child's line that holds nothing measured beyond the child's start (each
//     stretch of its line since a restart at offset 0) may be held by it.
//
// Only key counts can then tell, as with an unmeasured node. A node that left the parent
// before End and wrote on its own way is a fork (the child's data holds the parent's writes
// past that point), and so is a node with writes of the child's line that the other lacks.
func (l Lineage) UnmeasuredBetween(c, o Place) bool {
	cl, ol := l.line(c), l.line(o)
	// beside: other reaches the history s entered by a key-count link, by another way, at
	// the link's end or beyond.
	beside := func(s lineStep, other nodeLine) bool {
		t, ok := other.find(s.id)
		return ok && t.from != s.from && t.limit >= s.link.end-1
	}
	for _, s := range cl {
		if keyCountLink(s.link) && beside(s, ol) {
			return true
		}
	}
	// Offsets run on across every other link, so the offset a stretch starts at counts the
	// writes it holds since the restart below it.
	written := o.Offset
	for _, s := range ol {
		if !keyCountLink(s.link) {
			continue
		}
		if written > 0 {
			break
		}
		if beside(s, cl) {
			return true
		}
		written = s.limit
	}
	return false
}
