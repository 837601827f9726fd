package machine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Replication histories, in Valkey's terms: every primary has a replication ID (ReplID) and
// an offset. A replica that syncs takes its primary's ID. A promoted node gets a fresh ID and
// remembers the one it continues as ReplID2, valid for offsets below SecondOffset
// (second_repl_offset is exclusive). A node restarted from an RDB file, started as a replica
// (as the pod template starts every node), keeps its ID and offset but forgets ReplID2. Valkey
// itself uses these fields to decide whether a replica can continue from a primary (partial
// resync); the machine uses them the same way to decide whose data contains whose.
//
// A node restarted from its append-only file (the Durable profile) keeps its data but not its
// place: Valkey (8.x) restores the replication ID and offset only from RDB files, so the node
// reports a fresh ID at offset 0, like an empty node. Its data is a prefix of the shard's
// line up to a point nobody can tell (unmeasured); only its key count says it is not empty.
// Against it the machine knows two things: an empty node holds nothing it lacks, and, when
// every write is fsynced before it is acknowledged (appendfsync always), the last writer
// restarted from its own append-only file holds everything (complete): every write of the
// line went through it, and its file has them all after a process crash. With everysec it
// does not: the file may lack the last two seconds a replica holds (the real chaos suite lost
// a WAIT-acknowledged write to that rule), and the writer is one more unmeasured node.

// lineage is the set of replication IDs that carry a shard's data: the recorded history,
// the history it continued (up to where it left it), and every history that continues one of
// them, as seen on the nodes observed now (a node whose master_replid2 is in the set
// continued it, so its master_replid joins the set). The closure matters because a node
// restarted from its data reports only its current ID: a node that followed a hand-over
// target and then restarted names the target's history, not the recorded one.
type lineage struct {
	ids []string
	// prefixes are the histories the recorded one continued, each with the bound (exclusive)
	// below which a node of it holds a prefix of the recorded history's data.
	prefixes []HistoryLink
	// offsetsRestart: nodes restart from append-only files (persistence), which starts their
	// offsets from 0 again under a fresh ID, so offsets of different histories do not compare.
	offsetsRestart bool
	// parents maps a history to the one it continued and the exclusive offset where it
	// left it, as the record and the observed nodes report (replication IDs are unique, so
	// every report of the same ID agrees).
	parents map[string]parentRef
	// claims, when not nil, collects every containment the lineage asserts (DecideClaims).
	claims *[]Containment
}

type parentRef struct {
	id  string
	end int64
	// restarted: the child's offsets started again at 0 (HistoryLink.Restarted).
	restarted bool
}

// WholeHistory is the End of a link whose child holds all of the parent history from its
// first offset on: the complete writer restarted from its append-only file counts from 0
// again under a fresh ID, yet holds every write of the history it had. Every other link
// comes from a promotion, where offsets run on: the child at offset x holds the parent up to
// min(x, End-1).
const WholeHistory = int64(1) << 62

// linkBound is how far into a parent history a node reaches when it reaches the child up to
// bound (exclusive) and the link between them ends at end. Across a link whose child's
// offsets started again (restarted), the child's bound says nothing about the parent: every
// node of the child holds the parent up to end (found by the simulator: clamped by a later
// promotion's offset, a key-count link's reach shrank, a detached node holding more writes
// fell out of the candidates, and one holding fewer was promoted alone).
func linkBound(bound, end int64, restarted bool) int64 {
	if end == WholeHistory || restarted {
		return end
	}
	return min(bound, end)
}

func (d *decider) lineage(shard int, h History, seeds ...string) lineage {
	l := lineage{ids: []string{h.ID}, parents: map[string]parentRef{}, offsetsRestart: d.v.spec.Persistence, claims: d.claims}
	for _, id := range seeds {
		if !l.has(id) {
			l.ids = append(l.ids, id)
		}
	}
	child, bound := h.ID, WholeHistory
	for _, link := range h.links() {
		bound = linkBound(bound, link.End, link.Restarted)
		l.prefixes = append(l.prefixes, HistoryLink{ID: link.ID, End: bound, Restarted: link.Restarted})
		l.parents[child] = parentRef{link.ID, link.End, link.Restarted}
		child = link.ID
	}
	for _, n := range d.v.shard(shard) {
		if v := n.Valkey; n.Reachable && v.ReplID2 != "" && v.ReplID != "" {
			l.parents[v.ReplID] = parentRef{id: v.ReplID2, end: v.SecondOffset}
		}
	}
	for grew := true; grew; {
		grew = false
		for _, n := range d.v.shard(shard) {
			v := n.Valkey
			if usable(n) && l.extends(v) && !l.has(v.ReplID) && !l.leftBehind(v.ReplID) {
				l.ids = append(l.ids, v.ReplID)
				grew = true
			}
		}
	}
	return l
}

func (l lineage) has(id string) bool {
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
func (l lineage) continued(v Valkey) bool {
	if l.extends(v) {
		return true
	}
	_, ok := l.branchPoint(v)
	return ok && v.Offset == v.SecondOffset-1
}

// extends reports whether v's history joins the lineage: it continued one of the lineage's
// histories, or one the recorded history left behind across a key-count link (whose end
// cannot say how far the line went: helper-16's hand-over beside a key-count link).
func (l lineage) extends(v Valkey) bool {
	if v.ReplID2 == "" {
		return false
	}
	if l.has(v.ReplID2) {
		return true
	}
	p, ok := l.branchPoint(v)
	return ok && p.Restarted
}

// branchPoint returns the history the recorded one left behind that v's history continued, at
// or before the point where the line left it: a sibling of the line. Across a promotion's link
// only the sibling's start is the line's data; its writes are not, and a node holding them is
// off the line: an old primary's history that a failover passed over (found by the simulator:
// an old primary promoted from h1, deposed by a failover that elected a node still in h1 and
// promoted it from there, was taken for a node of the line and forgotten as deposed; its
// off-line write then made the shard's histories fork for good;
// regressions/old-line-beside-the-new-one.sched).
func (l lineage) branchPoint(v Valkey) (HistoryLink, bool) {
	for _, p := range l.prefixes {
		if v.ReplID2 == p.ID && v.SecondOffset <= p.End {
			return p, true
		}
	}
	return HistoryLink{}, false
}

// contains reports whether a node's data belongs to the lineage: it is in one of its
// histories, continues one, or is a prefix of a history the recorded one continued. A node
// still in a history the recorded one left behind belongs only below the point where it
// was left, whatever that history itself continued: beyond it are writes off the line (an
// isolated old primary's). Membership only makes a node a candidate; whose data contains
// whose is judged by covers.
func (l lineage) contains(v Valkey) bool {
	if !l.has(v.ReplID) {
		for _, p := range l.prefixes {
			if v.ReplID == p.ID {
				return v.Offset < p.End
			}
		}
	}
	return l.has(v.ReplID) || l.continued(v)
}

// leftBehind reports whether id is a history the recorded one continued (and left).
func (l lineage) leftBehind(id string) bool {
	for _, p := range l.prefixes {
		if p.ID == id {
			return true
		}
	}
	return false
}

// candidates are the nodes of a shard that may become its primary after the loss of the
// primary recorded with history h: they answer, are not loading, and hold data of its
// lineage. An empty restarted node has a fresh history and no ReplID2, so it is never among
// them.
//
// The lost primary itself, restarted with its data, is a candidate even when its ID is not
// in the lineage (it followed a hand-over target the operator cannot see now, say): what it
// holds is the shard's data as far as its offset reaches, because a restarted node comes up
// fenced and following nothing, so its data came from its own volume, and everything it
// ever held came from the shard's one line of writes (the machine never lets two nodes
// accept writes at once). The same holds for the node a hand-over was recorded to go to: it
// was a caught-up replica, and if the hand-over happened, it took writes as the primary
// under an ID the record never saw. Against these two, offsets decide, and their IDs join
// the lineage.
func (d *decider) candidates(op Operation) (lineage, []candidate) {
	// Nodes trusted by offset: fenced, following nothing and holding data (restarted from
	// their volume, or detached), and either the lost primary as a new process, or the
	// recorded hand-over target. Their histories are the shard's line too: they seed the
	// lineage, so that nodes that followed them are recognised even when nobody reports
	// where their ID came from. "Fenced" is: client writes are off, or it is a replica (a
	// primary a person demoted with FAILOVER TO keeps its writes open but takes none).
	onItsOwn := func(n *Node) bool {
		v := n.Valkey
		return usable(n) && (v.WritesFenced || v.Role == RoleReplica) && v.PrimaryHost == "" && !v.empty()
	}
	// After a restore, a node found on its own otherwise counts only with data loaded from it
	// or synced since (Valkey.Snapshot): one still holding data from before (a volume a
	// scale-down left behind and a scale-up brought back, say) holds writes the restore
	// discarded, however many. The lost primary and the hand-over target need no such mark:
	// recorded after the restore, their data is the line's since it, and a restart from an
	// append-only file (a fresh ID, which no restore's history names) or a reseed's new
	// history (DATA LOST after the restore) carries no mark (found by the simulator:
	// sim/testdata/regressions/restored-then-reseeded-writer-left-out.sched, the lost primary
	// left out and resynced from a replica holding less).
	fromRestore := func(n *Node) bool { return d.p.Restored == "" || n.Valkey.Snapshot == d.p.Restored }
	var trusted []*Node
	var seeds []string
	for _, n := range d.v.shard(op.Shard) {
		if onItsOwn(n) && ((n.Name == op.Lost && n.Valkey.RunID != op.LostRunID) || (op.HandOver != "" && n.Name == op.HandOver)) {
			trusted = append(trusted, n)
			seeds = append(seeds, n.Valkey.ReplID)
		}
	}
	// Unmeasured is judged before the trusted nodes' IDs seed the lineage: seeded, an ID is
	// known only because its node claims it.
	unseeded := d.lineage(op.Shard, op.LostHistory)
	l := d.lineage(op.Shard, op.LostHistory, seeds...)
	// A node on its own whose history the lineage cannot place at all is trusted by offset
	// too: only the recorded primary is ever opened for writes, so such data comes from a
	// node the machine promoted (or a hand-over) whose new ID it did not see before a
	// restart made the node forget where that ID came from, and it may be the newest of the
	// shard's writes. So is a node on its own in the history of a node trusted above (one
	// replication ID has one writer, so its data is that history's as far as its offset
	// reaches): that the lineage knows the ID only from the trusted node must not make it
	// less trusted than an ID nobody knows. A known fork (an ID the lineage left behind) is
	// not trusted.
	for _, n := range d.v.shard(op.Shard) {
		v := n.Valkey
		unplaced := !l.knows(v.ReplID) && !l.knows(v.ReplID2)
		seeded := slices.Contains(seeds, v.ReplID) && !l.leftBehind(v.ReplID)
		if onItsOwn(n) && fromRestore(n) && (unplaced || seeded) && !slices.Contains(trusted, n) {
			trusted = append(trusted, n)
		}
	}
	var out []candidate
	for _, n := range d.v.shard(op.Shard) {
		if !usable(n) {
			continue
		}
		isTrusted := slices.Contains(trusted, n)
		if l.contains(n.Valkey) || isTrusted {
			c := candidate{Node: n, byOffset: isTrusted, removed: d.removed(d.p, n), unmeasured: unseeded.unmeasured(n.Valkey), writer: n.Name == op.Writer}
			c.complete = c.unmeasured && d.completeWriter(op, n)
			// A deposed pod counts as what it was deposed with unless it is on the line (its
			// history is the record's or continues it) or synced since (deposed.go): measured
			// in a history beside the line, its writes there may be the ones off the line
			// (found by the simulator: a deposed primary still in its own history, which a
			// key-count link put beside the line, was elected by key count).
			if m, ok := d.p.Shards[op.Shard].deposedOf(n.Name); ok && !c.complete && !m.synced(n.Valkey) && (c.unmeasured || !unseeded.has(n.Valkey.ReplID)) {
				c.mark = &m
			}
			out = append(out, c)
		}
	}
	return l, out
}

// unmeasured reports whether v holds data whose extent nobody can tell: a fresh ID the
// lineage cannot place, continuing nothing, at offset 0, with keys (restarted from its
// append-only file).
func (l lineage) unmeasured(v Valkey) bool {
	return v.ReplID2 == "" && v.Offset == 0 && v.Keys > 0 && !l.knows(v.ReplID)
}

// completeWriter reports whether n is op's writer restarted from its own append-only file
// with every write fsynced before it was acknowledged: its data then contains every write of
// the shard's line (every one went through it, and a process crash loses nothing the kernel
// was given). Not so with appendfsync everysec (the write to the file may be postponed past
// the reply), nor when a hand-over was recorded
// (its target may have taken writes after it), nor without persistence, nor in a re-election
// (Writer is not Lost): the recorded history is then the elected node's, which need not be
// the writer's (found by the simulator: an elected node restarted from its file, holding an
// isolated old primary's writes, was taken for a part of the writer's history).
func (d *decider) completeWriter(op Operation, n *Node) bool {
	return d.v.spec.Persistence && d.v.spec.FsyncAlways && op.HandOver == "" && op.Writer == op.Lost && n.Name == op.Writer && n.Valkey.RunID != op.WriterRunID
}

// candidate is a node that may be promoted. byOffset marks the restarted lost primary, whose
// data is compared by offset only. removed marks a node on an ordinal a recorded scale-down
// removes: it is elected only when no other candidate holds all the data. unmeasured marks a
// node restarted from its append-only file, complete the writer so restarted (see the top of
// this file).
type candidate struct {
	*Node
	byOffset   bool
	removed    bool
	unmeasured bool
	complete   bool
	// mark is the record's entry for a deposed pod restarted from its append-only file
	// (deposed.go): its key count may include writes off the line.
	mark *DeposedPod
	// writer marks the node of the last process that may have accepted writes (restarted
	// or not): among candidates no evidence tells apart (key counts equal), its data is the
	// shard's newest, where the lowest ordinal is anyone's (found by the simulator: an old
	// primary holding writes the shard gave up, never resynced, won such a tie against the
	// restarted writer and its WAIT-acknowledged writes were lost).
	writer bool
}

// holds reports whether c's data contains o's.
func (l lineage) holds(c, o candidate) bool {
	h, _ := l.compare(c, o)
	return h
}

// compare reports whether c's data contains o's, and whether that rests on key counts. The
// complete writer holds every node of the recorded history (or older); no such node holds
// it. Beyond that an unmeasured node's extent is unknown (another unmeasured node may even
// be a writer a person handed over to behind the machine's back), and so is the distance
// between two nodes trusted by offset in different histories when nodes restart from
// append-only files: each such restart starts its offsets from 0 again, so an offset says how
// far a node got since the last restart of its history's origin, not along the shard's line
// (found by the simulator: a replica of a restarted writer, holding a WAIT-acknowledged write
// more, reported a lower offset than a node of the older history). Key counts are then the
// only evidence left. More keys is not proof of more writes (an overwrite adds none, a delete
// removes one), which is why an election that needed them says so.
func (l lineage) compare(c, o candidate) (holds, estimate bool) {
	holds, estimate = l.judge(c, o)
	// Of a deposed pod, c is said to hold only the line up to where the line left it (what
	// its volume holds beyond is off the line): that claim is the reach reachesLeft noted.
	if holds && o.mark == nil {
		l.note(Containment{Holder: c.Valkey.RunID, Of: o.Valkey.RunID, Estimate: estimate})
	}
	return holds, estimate
}

// judge is compare without noting the claim.
func (l lineage) judge(c, o candidate) (holds, estimate bool) {
	switch {
	case o.Valkey.empty():
		return true, false
	case c.complete && l.recorded(o.Valkey):
		return true, false
	case o.complete && l.recorded(c.Valkey):
		return false, false
	case c.Valkey.empty():
		return false, false
	case c.mark != nil || o.mark != nil:
		return l.compareDeposed(c, o)
	case c.unmeasured || o.unmeasured:
		return c.Valkey.Keys >= o.Valkey.Keys, true
	case l.covers(c.Valkey, o.Valkey):
		return true, false
	case l.unmeasuredBetween(c.Valkey, o.Valkey):
		return c.Valkey.Keys >= o.Valkey.Keys, true
	case !c.byOffset && !o.byOffset:
		return false, false
	case l.offsetsRestart && c.Valkey.ReplID != o.Valkey.ReplID:
		return c.Valkey.Keys >= o.Valkey.Keys, true
	}
	return c.Valkey.Offset >= o.Valkey.Offset, false
}

// recorded reports whether v is in the recorded history or one it continued (and left).
func (l lineage) recorded(v Valkey) bool {
	return v.ReplID != "" && (v.ReplID == l.ids[0] || l.leftBehind(v.ReplID))
}

// covers reports whether b's data contains all of a's: a could continue from b by partial
// resync, following the chain of continued histories the lineage knows (a node restarted
// from its data reports only its current ID, but the record or another node may still say
// where that ID came from). An empty node (offset 0, no keys) is contained in anything; a
// node at offset 0 with keys holds its history's starting data. A node that switched to
// a new ID but has written nothing since (Offset == SecondOffset-1: promoted and still
// fenced, say) is judged by the history it continues.
func (l lineage) covers(b, a Valkey) bool {
	if a.empty() {
		return true
	}
	ok, estimated := l.covering(b, a)
	if ok {
		l.note(Containment{Holder: b.RunID, Of: a.RunID, Estimate: estimated})
	}
	return ok
}

// covering is covers for a node with data, and whether the answer crossed a key-count link.
func (l lineage) covering(b, a Valkey) (ok, estimated bool) {
	if ok, estimated := l.reach(b, a.ReplID, a.Offset); ok {
		return true, estimated
	}
	if a.ReplID2 != "" && a.Offset == a.SecondOffset-1 {
		if ok, estimated := l.reach(b, a.ReplID2, a.Offset); ok {
			return true, estimated
		}
	}
	// A node still at the point where its history continued the parent (by promotion: offsets
	// run on) holds none of its own history's writes, only the parent's up to there, whether
	// or not it reports the parent (a primary that renamed its history on its first replica's
	// sync does not; found by the simulator: regressions/cluster-stray-covers-a-renamed-history.sched,
	// where such a primary without slots waited for good beside a node serving them with the
	// same data).
	if p, ok := l.parents[a.ReplID]; ok && !p.restarted && p.end != WholeHistory && a.Offset == p.end-1 {
		return l.reach(b, p.id, a.Offset)
	}
	return false, false
}

// reaches reports whether b's data contains history id up to offset pos, walking up from
// b's history through the histories each continued.
func (l lineage) reaches(b Valkey, id string, pos int64) bool {
	ok, _ := l.reach(b, id, pos)
	return ok
}

// reach is reaches, noting the claim, and whether the walk crossed a key-count link (whose
// end an election estimated by key count).
func (l lineage) reach(b Valkey, id string, pos int64) (ok, estimated bool) {
	s, found := l.line(b).find(id)
	if !found || pos > s.limit {
		return false, false
	}
	l.note(Containment{Holder: b.RunID, ID: id, Through: pos, Estimate: s.estimated})
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
func (l lineage) line(b Valkey) nodeLine {
	var out nodeLine
	step := lineStep{id: b.ReplID, limit: b.Offset}
	for depth := 0; depth < 16 && step.id != ""; depth++ {
		out = append(out, step)
		var up parentRef
		if depth == 0 && b.ReplID2 != "" {
			up = parentRef{id: b.ReplID2, end: b.SecondOffset}
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

// unmeasuredBetween reports whether what one of c and o holds beyond the other's data may lie
// in the unmeasured start of a key-count link (HistoryLink.Restarted, not the complete
// writer's): the link says its child's data at offset 0 held the parent up to End, and beyond
// that an unknown further part of the shard's line. So for a node that left the parent at End
// or later by another way (a hand-over behind the machine's back), or is still in it, ahead:
//   - a node whose line crosses the link may hold it (found by the simulator: a node elected
//     by key count had, before its restart, followed the replica of a hand-over target and
//     held that target's write; the link could not say so, and the replica that went on from
//     it, holding the target's write and a WAIT-acknowledged one, was taken for a fork of the
//     other node of the target's history, and the shard waited for good);
//   - a node of the child's line that holds nothing measured beyond the child's start (each
//     stretch of its line since a restart at offset 0) may be held by it.
//
// Only key counts can then tell, as with an unmeasured node. A node that left the parent
// before End and wrote on its own way is a fork (the child's data holds the parent's writes
// past that point), and so is a node with writes of the child's line that the other lacks.
func (l lineage) unmeasuredBetween(c, o Valkey) bool {
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

// keyCountLink reports whether a link is a key-count election's: its child restarted from
// data the election weighed by key count against the parent (the complete writer's link
// holds the whole parent and is measured).
func keyCountLink(p parentRef) bool {
	return p.restarted && p.end != WholeHistory
}

// unknown lists the nodes of a shard, other than except, whose data the operator cannot see
// now but which may hold data: unreachable or loading nodes, and, with persistence, nodes
// whose pod is gone or not running (their volume keeps the data), except pods gone for good
// because the objects no longer ask for their ordinal (a scale-down removes a pod only while
// the recorded primary answers on an ordinal that stays, so what it held is the primary's).
func (d *decider) unknown(shard int, except string) []*Node {
	var out []*Node
	for _, n := range d.v.shard(shard) {
		if n.Name == except {
			continue
		}
		switch {
		case n.Reachable && !n.Valkey.Loading:
			continue
		case !n.Pod.Exists && d.obs.Objects.Shards > 0 && n.Ordinal > d.obs.Objects.Replicas:
			continue
		case !n.Pod.Exists || !n.Pod.Running:
			if d.v.spec.Persistence {
				out = append(out, n)
			}
		default:
			out = append(out, n)
		}
	}
	return out
}

// quorum reports whether enough of a shard is visible to promote safely for op. A write
// acknowledged with WAIT MinSyncReplicas is on that many nodes besides the primary that
// took it (op.Writer, not counted), so with at most MinSyncReplicas-1 of them unseen at
// least one holder is seen; and an isolated old primary can keep no more than
// MinSyncReplicas-1 replicas, below its min-replicas-to-write. With MinSyncReplicas 0
// nothing bounds what an unseen node holds, so all must be seen.
func (d *decider) quorum(op Operation) (bool, string) {
	allowed := d.v.spec.MinSyncReplicas - 1
	if allowed < 0 {
		allowed = 0
	}
	unknown := d.unknown(op.Shard, op.Writer)
	if len(unknown) <= allowed {
		return true, ""
	}
	var kept []*Node
	for _, n := range unknown {
		if !slices.Contains(d.v.spec.FailoverWithout, n.Name) {
			kept = append(kept, n)
		}
	}
	if len(kept) <= allowed {
		return true, ""
	}
	return false, fmt.Sprintf("%d node(s) of shard %d unseen (%s), at most %d allowed: they may hold writes acknowledged with WAIT %d that no node seen holds. "+
		"Bring them back (their node, their pods), or, to fail over without them and give up the writes only they hold, name them in the annotation valkey.fsm.dev/failover-without",
		len(unknown), op.Shard, names(unknown), allowed, max(1, d.v.spec.MinSyncReplicas))
}

// givenUp lists the unseen nodes a failover goes on without because the user named them
// (Spec.FailoverWithout) and the quorum needed it: writes only they hold are lost.
func (d *decider) givenUp(op Operation) []*Node {
	allowed := max(0, d.v.spec.MinSyncReplicas-1)
	unknown := d.unknown(op.Shard, op.Writer)
	if len(unknown) <= allowed {
		return nil
	}
	var out []*Node
	for _, n := range unknown {
		if slices.Contains(d.v.spec.FailoverWithout, n.Name) {
			out = append(out, n)
		}
	}
	return out
}

// knows reports whether the lineage can place id: one of its histories, one the record
// continued and left, an ancestor of one of those as the observed nodes report it, or a
// history whose reported ancestry leads to one of them (a fork). A history that only names
// a parent nobody can place is not known: its own report says nothing about the shard's line
// (a node handed over to twice behind the machine's back names only the history in between).
func (l lineage) knows(id string) bool {
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
	for _, p := range l.prefixes {
		related[p.ID] = true
	}
	for depth := 0; depth < 16 && id != ""; depth++ {
		if related[id] {
			return true
		}
		id = l.parents[id].id
	}
	return false
}

// elect picks the node to promote among candidates: the one whose data contains every other
// candidate's (never one behind another, never across a fork). Nodes that contain each
// other's data hold the same, so among them it prefers a node on an ordinal that stays (a
// node a scale-down removes is elected only when it alone holds everything; it is handed
// over from afterwards), then the highest offset, then a node that is already a primary
// (replicas continue from it without a full sync), then the lowest ordinal. It returns nil
// when no candidate contains all others: the histories forked and promoting any would drop
// the others' writes.
func elect(l lineage, cands []candidate) (*Node, string) {
	if len(cands) == 0 {
		return nil, "no node holds the shard's data"
	}
	sorted := append([]candidate(nil), cands...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.removed != b.removed {
			return b.removed
		}
		if a.complete != b.complete {
			return a.complete
		}
		if a.Valkey.Offset != b.Valkey.Offset {
			return a.Valkey.Offset > b.Valkey.Offset
		}
		ap, bp := a.Valkey.Role == RolePrimary, b.Valkey.Role == RolePrimary
		if ap != bp {
			return ap
		}
		// In cluster mode, among equals, the node that serves the shard's slots: a primary
		// without slots cannot take them (Promote only opens it), and the one that serves
		// them refuses to follow anyone (found by the simulator: a primary re-created on a new
		// IP with its data lost the election to an equal primary without slots, for good).
		if as, bs := len(a.Valkey.Slots) > 0, len(b.Valkey.Slots) > 0; as != bs {
			return as
		}
		if a.writer != b.writer {
			return a.writer
		}
		return a.Ordinal < b.Ordinal
	})
	for _, c := range sorted {
		dominates := true
		for _, o := range cands {
			if o.Node != c.Node && !l.holds(c, o) {
				dominates = false
				break
			}
		}
		if dominates {
			return c.Node, ""
		}
	}
	nodes := make([]*Node, len(cands))
	for i, c := range cands {
		nodes[i] = c.Node
	}
	return nil, "candidates' histories forked: " + names(nodes)
}

// electionCaveat says how the election of c among cands rested on key counts, or "" when it
// did not: some candidate's data could be placed only by its key count (restarted from its
// append-only file), so writes that overwrote keys may be counted wrong.
func electionCaveat(l lineage, cands []candidate, c *Node) string {
	var me candidate
	for _, x := range cands {
		if x.Node == c {
			me = x
		}
	}
	var by []*Node
	for _, o := range cands {
		if _, estimate := l.compare(me, o); o.Node != c && estimate {
			by = append(by, o.Node)
		}
	}
	if len(by) == 0 {
		return ""
	}
	return fmt.Sprintf("chosen over %s by key count (%d keys): restarted from append-only files, which keep no replication offset, their data cannot be placed in the history", names(by), me.Valkey.Keys)
}

// empty reports whether v holds no data: offset 0 and no keys.
func (v Valkey) empty() bool {
	return v.Offset == 0 && v.Keys == 0
}

// moreData orders nodes by how much data they visibly hold, for a reseed: the offset, then
// the key count (a node restarted from its append-only file reports offset 0).
func moreData(a, b *Node) bool {
	if a.Valkey.Offset != b.Valkey.Offset {
		return a.Valkey.Offset > b.Valkey.Offset
	}
	return a.Valkey.Keys > b.Valkey.Keys
}

func names(nodes []*Node) string {
	s := make([]string, len(nodes))
	for i, n := range nodes {
		s[i] = n.Name
	}
	return strings.Join(s, ",")
}

// historyOf is the history a node reports, as recorded when it becomes a primary.
func historyOf(n *Node) History {
	if n.Valkey.ReplID2 == "" {
		return History{ID: n.Valkey.ReplID}
	}
	return History{ID: n.Valkey.ReplID, PrevID: n.Valkey.ReplID2, PrevEnd: n.Valkey.SecondOffset}
}
