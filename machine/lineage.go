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
// (second_repl_offset is exclusive). A node restarted from its data, started as a replica
// (as the pod template starts every node), keeps its ID and offset but forgets ReplID2. Valkey
// itself uses these fields to decide whether a replica can continue from a primary (partial
// resync); the machine uses them the same way to decide whose data contains whose.

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
	// parents maps a history to the one it continued and the exclusive offset where it
	// left it, as the record and the observed nodes report (replication IDs are unique, so
	// every report of the same ID agrees).
	parents map[string]parentRef
}

type parentRef struct {
	id  string
	end int64
}

func (d *decider) lineage(shard int, h History, seeds ...string) lineage {
	l := lineage{ids: []string{h.ID}, parents: map[string]parentRef{}}
	for _, id := range seeds {
		if !l.has(id) {
			l.ids = append(l.ids, id)
		}
	}
	child, bound := h.ID, int64(1)<<62
	for _, link := range h.links() {
		bound = min(bound, link.End)
		l.prefixes = append(l.prefixes, HistoryLink{ID: link.ID, End: bound})
		l.parents[child] = parentRef{link.ID, link.End}
		child = link.ID
	}
	for _, n := range d.v.shard(shard) {
		if v := n.Valkey; n.Reachable && v.ReplID2 != "" && v.ReplID != "" {
			l.parents[v.ReplID] = parentRef{v.ReplID2, v.SecondOffset}
		}
	}
	for grew := true; grew; {
		grew = false
		for _, n := range d.v.shard(shard) {
			v := n.Valkey
			if usable(n) && l.continued(v) && !l.has(v.ReplID) && !l.leftBehind(v.ReplID) {
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
	if v.ReplID2 == "" {
		return false
	}
	if l.has(v.ReplID2) {
		return true
	}
	for _, p := range l.prefixes {
		if v.ReplID2 == p.ID && v.SecondOffset <= p.End {
			return true
		}
	}
	return false
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
	// primary a person demoted with FAILOVER TO keeps its writes open but takes none). After
	// a restore, only data loaded from it or synced since counts: a node still holding data
	// from before (a volume a scale-down left behind and a scale-up brought back, say) holds
	// writes the restore discarded, however many.
	onItsOwn := func(n *Node) bool {
		v := n.Valkey
		return usable(n) && (v.WritesFenced || v.Role == RoleReplica) && v.PrimaryHost == "" && v.Offset > 0 && (d.p.Restored == "" || v.Snapshot == d.p.Restored)
	}
	var trusted []*Node
	var seeds []string
	for _, n := range d.v.shard(op.Shard) {
		if onItsOwn(n) && ((n.Name == op.Lost && n.Valkey.RunID != op.LostRunID) || (op.HandOver != "" && n.Name == op.HandOver)) {
			trusted = append(trusted, n)
			seeds = append(seeds, n.Valkey.ReplID)
		}
	}
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
		if onItsOwn(n) && (unplaced || seeded) && !slices.Contains(trusted, n) {
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
			out = append(out, candidate{Node: n, byOffset: isTrusted, removed: d.removed(d.p, n)})
		}
	}
	return l, out
}

// candidate is a node that may be promoted. byOffset marks the restarted lost primary, whose
// data is compared by offset only. removed marks a node on an ordinal a recorded scale-down
// removes: it is elected only when no other candidate holds all the data.
type candidate struct {
	*Node
	byOffset bool
	removed  bool
}

// holds reports whether c's data contains o's.
func (l lineage) holds(c, o candidate) bool {
	if l.covers(c.Valkey, o.Valkey) {
		return true
	}
	return (c.byOffset || o.byOffset) && c.Valkey.Offset >= o.Valkey.Offset
}

// covers reports whether b's data contains all of a's: a could continue from b by partial
// resync, following the chain of continued histories the lineage knows (a node restarted
// from its data reports only its current ID, but the record or another node may still say
// where that ID came from). An empty node is contained in anything. A node that switched to
// a new ID but has written nothing since (Offset == SecondOffset-1: promoted and still
// fenced, say) is judged by the history it continues.
func (l lineage) covers(b, a Valkey) bool {
	if a.Offset == 0 {
		return true
	}
	if l.reaches(b, a.ReplID, a.Offset) {
		return true
	}
	return a.ReplID2 != "" && a.Offset == a.SecondOffset-1 && l.reaches(b, a.ReplID2, a.Offset)
}

// reaches reports whether b's data contains history id up to offset pos, walking up from
// b's history through the histories each continued.
func (l lineage) reaches(b Valkey, id string, pos int64) bool {
	cur, limit := b.ReplID, b.Offset
	for depth := 0; depth < 16 && cur != ""; depth++ {
		if cur == id {
			return pos <= limit
		}
		var up parentRef
		if depth == 0 && b.ReplID2 != "" {
			up = parentRef{b.ReplID2, b.SecondOffset}
		} else {
			p, ok := l.parents[cur]
			if !ok {
				return false
			}
			up = p
		}
		cur, limit = up.id, min(limit, up.end-1)
	}
	return false
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
	return false, fmt.Sprintf("%d node(s) of shard %d unseen (%s), at most %d allowed", len(unknown), op.Shard, names(unknown), allowed)
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
		if a.Valkey.Offset != b.Valkey.Offset {
			return a.Valkey.Offset > b.Valkey.Offset
		}
		ap, bp := a.Valkey.Role == RolePrimary, b.Valkey.Role == RolePrimary
		if ap != bp {
			return ap
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
