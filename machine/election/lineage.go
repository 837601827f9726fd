package election

// Lineage is the set of replication IDs that carry a shard's data: the recorded history,
// the histories it continued (up to where it left each), and every history that continues
// one of them, as seen on the nodes observed now (a node whose master_replid2 is in the set
// continued it, so its master_replid joins the set). The closure matters because a node
// restarted from its data reports only its current ID: a node that followed a hand-over
// target and then restarted names the target's history, not the recorded one.
//
// Build one with New, then Seed, Report and Grow, in that order.
type Lineage struct {
	ids []string
	// prefixes are the histories the recorded one continued, each with the bound (exclusive)
	// below which a node of it holds a prefix of the recorded history's data.
	prefixes []Link
	// offsetsRestart: nodes restart from append-only files (persistence), which starts their
	// offsets from 0 again under a fresh ID, so offsets of different histories do not compare.
	offsetsRestart bool
	// parents maps a history to the one it continued and the exclusive offset where it
	// left it, as the record and the observed nodes report (replication IDs are unique, so
	// every report of the same ID agrees).
	parents map[string]parentRef
	// claims, when not nil, collects every containment the lineage asserts.
	claims *[]Containment
}

// New starts the lineage of the recorded history id, which continued links (nearest first).
// offsetsRestart says nodes restart from append-only files; claims, when not nil, collects
// the containments the lineage asserts.
func New(id string, offsetsRestart bool, claims *[]Containment) *Lineage {
	return &Lineage{ids: []string{id}, parents: map[string]parentRef{}, offsetsRestart: offsetsRestart, claims: claims}
}

// Seed adds a history the caller trusts to carry the shard's data.
func (l *Lineage) Seed(id string) {
	if !l.Has(id) {
		l.ids = append(l.ids, id)
	}
}

// Continued records the chain of histories the recorded one continued, nearest first.
func (l *Lineage) Continued(links []Link) {
	child, bound := l.ids[0], WholeHistory
	for _, link := range links {
		bound = linkBound(bound, link.End, link.Restarted)
		l.prefixes = append(l.prefixes, Link{ID: link.ID, End: bound, Restarted: link.Restarted})
		l.parents[child] = parentRef{link.ID, link.End, link.Restarted}
		child = link.ID
	}
}

// Report records where a node that answers says its history came from.
func (l *Lineage) Report(p Place) {
	if p.PrevID != "" && p.ID != "" {
		l.parents[p.ID] = parentRef{id: p.PrevID, end: p.PrevEnd}
	}
}

// Grow adds the histories of the usable nodes that continue one of the lineage's, until
// none is left to add.
func (l *Lineage) Grow(usable []Place) {
	for grew := true; grew; {
		grew = false
		for _, p := range usable {
			if l.extends(p) && !l.Has(p.ID) && !l.LeftBehind(p.ID) {
				l.ids = append(l.ids, p.ID)
				grew = true
			}
		}
	}
}

// OffsetsRestart reports whether nodes restart from append-only files.
func (l Lineage) OffsetsRestart() bool { return l.offsetsRestart }

// Parent is the history id continued, and where, as the lineage knows it.
func (l Lineage) Parent(id string) (Link, bool) {
	p, ok := l.parents[id]
	return Link{ID: p.id, End: p.end, Restarted: p.restarted}, ok
}

// Has reports whether id is one of the lineage's histories.
func (l Lineage) Has(id string) bool {
	for _, x := range l.ids {
		if x == id && id != "" {
			return true
		}
	}
	return false
}

// continued reports whether a node switched to its own history from one of the lineage's:
// from one of its histories, or from the previous history at a point the recorded one also
// went through.
func (l Lineage) continued(p Place) bool {
	if l.extends(p) {
		return true
	}
	_, ok := l.branchPoint(p)
	return ok && p.Offset == p.PrevEnd-1
}

// extends reports whether p's history joins the lineage: it continued one of the lineage's
// histories, or one the recorded history left behind across a key-count link (whose end
// cannot say how far the line went).
func (l Lineage) extends(p Place) bool {
	if p.PrevID == "" {
		return false
	}
	if l.Has(p.PrevID) {
		return true
	}
	b, ok := l.branchPoint(p)
	return ok && b.Restarted
}

// branchPoint returns the history the recorded one left behind that p's history continued, at
// or before the point where the line left it: a sibling of the line. Across a promotion's link
// only the sibling's start is the line's data; its writes are not, and a node holding them is
// off the line: an old primary's history that a failover passed over.
func (l Lineage) branchPoint(p Place) (Link, bool) {
	for _, x := range l.prefixes {
		if p.PrevID == x.ID && p.PrevEnd <= x.End {
			return x, true
		}
	}
	return Link{}, false
}

// Contains reports whether a node's data belongs to the lineage: it is in one of its
// histories, continues one, or is a prefix of a history the recorded one continued. A node
// still in a history the recorded one left behind belongs only below the point where it
// was left, whatever that history itself continued: beyond it are writes off the line (an
// isolated old primary's). Membership only makes a node a candidate; whose data contains
// whose is judged by Covers.
func (l Lineage) Contains(p Place) bool {
	if !l.Has(p.ID) {
		for _, x := range l.prefixes {
			if p.ID == x.ID {
				return p.Offset < x.End
			}
		}
	}
	return l.Has(p.ID) || l.continued(p)
}

// LeftBehind reports whether id is a history the recorded one continued (and left).
func (l Lineage) LeftBehind(id string) bool {
	for _, x := range l.prefixes {
		if x.ID == id {
			return true
		}
	}
	return false
}

// Unmeasured reports whether p holds data whose extent nobody can tell: a fresh ID the
// lineage cannot place, continuing nothing, at offset 0, with keys (restarted from its
// append-only file).
func (l Lineage) Unmeasured(p Place) bool {
	return p.PrevID == "" && p.Offset == 0 && p.Keys > 0 && !l.Knows(p.ID)
}

// Recorded reports whether p is in the recorded history or one it continued (and left).
func (l Lineage) Recorded(p Place) bool {
	return p.ID != "" && (p.ID == l.ids[0] || l.LeftBehind(p.ID))
}

// Knows reports whether the lineage can place id: one of its histories, one the record
// continued and left, an ancestor of one of those as the observed nodes report it, or a
// history whose reported ancestry leads to one of them (a fork). A history that only names
// a parent nobody can place is not known: its own report says nothing about the shard's line
// (a node handed over to twice behind the machine's back names only the history in between).
func (l Lineage) Knows(id string) bool {
	if id == "" {
		return false
	}
	related := map[string]bool{}
	for _, x := range l.ids {
		for depth := 0; depth < 16 && x != "" && !related[x]; depth++ {
			related[x] = true
			x = l.parents[x].id
		}
	}
	for _, x := range l.prefixes {
		related[x.ID] = true
	}
	for depth := 0; depth < 16 && id != ""; depth++ {
		if related[id] {
			return true
		}
		id = l.parents[id].id
	}
	return false
}
