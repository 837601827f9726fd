package machine

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/valkey-fsm/valkey-operator/machine/election"
)

// The election's glue: the lineage of a shard built from the record and the observed nodes,
// the candidates of a failover, the quorum and the election. The rules of whose data contains
// whose are the election package's (machine/election, docs/development/election.md).

// lineage is the shard's election.Lineage, asked with the machine's observed nodes.
type lineage struct{ election.Lineage }

// WholeHistory is the End of a link whose child holds all of the parent history
// (election.WholeHistory).
const WholeHistory = election.WholeHistory

// place is where v's data stands, in the election model's terms.
func place(v Valkey) election.Place {
	return election.Place{RunID: v.RunID, ID: v.ReplID, PrevID: v.ReplID2, PrevEnd: v.SecondOffset, Offset: v.Offset, Keys: v.Keys}
}

func (l lineage) has(id string) bool        { return l.Has(id) }
func (l lineage) leftBehind(id string) bool { return l.LeftBehind(id) }
func (l lineage) knows(id string) bool      { return l.Knows(id) }
func (l lineage) contains(v Valkey) bool    { return l.Contains(place(v)) }
func (l lineage) unmeasured(v Valkey) bool  { return l.Unmeasured(place(v)) }
func (l lineage) covers(b, a Valkey) bool   { return l.Covers(place(b), place(a)) }
func (l lineage) reaches(b Valkey, id string, pos int64) bool {
	return l.Reaches(place(b), id, pos)
}

// lineage is the lineage of the recorded history h of shard, seeded with histories the
// caller trusts, grown from the shard's observed nodes.
func (d *decider) lineage(shard int, h History, seeds ...string) lineage {
	l := election.New(h.ID, d.v.spec.Persistence, d.claims)
	for _, id := range seeds {
		l.Seed(id)
	}
	l.Continued(h.links())
	var places []election.Place
	for _, n := range d.v.shard(shard) {
		if n.Reachable {
			l.Report(place(n.Valkey))
		}
		if usable(n) {
			places = append(places, place(n.Valkey))
		}
	}
	l.Grow(places)
	return lineage{*l}
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
	// history (DATA LOST after the restore) carries no mark, and leaving them out would
	// resync the lost primary from a replica holding less
	// (regressions/restored-then-reseeded-writer-left-out.sched).
	fromRestore := func(n *Node) bool { return d.p.Restored == "" || n.Valkey.Snapshot == d.p.Restored }
	var trusted []*Node
	var seeds []string
	for _, n := range d.v.shard(op.Election.Shard) {
		if onItsOwn(n) && ((n.Name == op.Election.Lost && n.Valkey.RunID != op.Election.LostRunID) || (op.HandOver.To != "" && n.Name == op.HandOver.To)) {
			trusted = append(trusted, n)
			seeds = append(seeds, n.Valkey.ReplID)
		}
	}
	// Unmeasured is judged before the trusted nodes' IDs seed the lineage: seeded, an ID is
	// known only because its node claims it.
	unseeded := d.lineage(op.Election.Shard, op.Election.LostHistory)
	l := d.lineage(op.Election.Shard, op.Election.LostHistory, seeds...)
	// A node on its own whose history the lineage cannot place at all is trusted by offset
	// too: only the recorded primary is ever opened for writes, so such data comes from a
	// node the machine promoted (or a hand-over) whose new ID it did not see before a
	// restart made the node forget where that ID came from, and it may be the newest of the
	// shard's writes. So is a node on its own in the history of a node trusted above (one
	// replication ID has one writer, so its data is that history's as far as its offset
	// reaches): that the lineage knows the ID only from the trusted node must not make it
	// less trusted than an ID nobody knows. A known fork (an ID the lineage left behind) is
	// not trusted.
	for _, n := range d.v.shard(op.Election.Shard) {
		v := n.Valkey
		unplaced := !l.knows(v.ReplID) && !l.knows(v.ReplID2)
		seeded := slices.Contains(seeds, v.ReplID) && !l.leftBehind(v.ReplID)
		if onItsOwn(n) && fromRestore(n) && (unplaced || seeded) && !slices.Contains(trusted, n) {
			trusted = append(trusted, n)
		}
	}
	var out []candidate
	for _, n := range d.v.shard(op.Election.Shard) {
		if !usable(n) {
			continue
		}
		isTrusted := slices.Contains(trusted, n)
		if l.contains(n.Valkey) || isTrusted {
			c := candidate{Node: n, byOffset: isTrusted, removed: d.removed(d.p, n), unmeasured: unseeded.unmeasured(n.Valkey), writer: n.Name == op.Election.Writer}
			c.complete = c.unmeasured && d.completeWriter(op, n)
			// A deposed pod counts as what it was deposed with unless it is on the line (its
			// history is the record's or continues it) or synced since (deposed.go): measured
			// in a history beside the line (a key-count link can put its own history there),
			// its writes there may be the ones off the line.
			if m, ok := d.p.Shards[op.Election.Shard].deposedOf(n.Name); ok && !c.complete && !m.synced(n.Valkey) && (c.unmeasured || !unseeded.has(n.Valkey.ReplID)) {
				c.mark = &m
			}
			out = append(out, c)
		}
	}
	return l, out
}

// completeWriter reports whether n is op's writer restarted from its own append-only file
// with every write fsynced before it was acknowledged: its data then contains every write of
// the shard's line (every one went through it, and a process crash loses nothing the kernel
// was given). Not so with appendfsync everysec (the write to the file may be postponed past
// the reply), nor when a hand-over was recorded
// (its target may have taken writes after it), nor without persistence, nor in a re-election
// (Writer is not Lost): the recorded history is then the elected node's, which need not be
// the writer's (an elected node restarted from its file may hold an isolated old primary's
// writes).
func (d *decider) completeWriter(op Operation, n *Node) bool {
	return d.v.spec.Persistence && d.v.spec.FsyncAlways && op.HandOver.To == "" && op.Election.Writer == op.Election.Lost && n.Name == op.Election.Writer && n.Valkey.RunID != op.Election.WriterRunID
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
	// shard's newest, where the lowest ordinal is anyone's (an old primary holding writes
	// the shard gave up, never resynced, could hold as many keys).
	writer bool
}

// holds reports whether c's data contains o's.
func (l lineage) holds(c, o candidate) bool {
	h, _ := l.compare(c, o)
	return h
}

// compare reports whether c's data contains o's, and whether that rests on key counts
// (election.Lineage.Compare); where it would and the keys of both were compared, they decide
// (keysets.go), unless one is a deposed pod: its mark says which of its keys are off the line,
// to be discarded, which its keys cannot tell.
func (l lineage) compare(c, o candidate) (holds, estimate bool) {
	holds, estimate = l.Compare(c.compared(), o.compared())
	if estimate && c.mark == nil && o.mark == nil {
		if contains, known := keysContain(c.Node, o.Node); known {
			if contains {
				l.noteKeys(c.Node, o.Node)
			}
			return contains, false
		}
	}
	return holds, estimate
}

// compared is c as the election model compares it.
func (c candidate) compared() election.Candidate {
	out := election.Candidate{Place: place(c.Valkey), ByOffset: c.byOffset, Unmeasured: c.unmeasured, Complete: c.complete}
	if c.mark != nil {
		out.Mark = &election.Mark{Left: c.mark.Left, Keys: c.mark.Keys}
	}
	return out
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
	unknown := d.unknown(op.Election.Shard, op.Election.Writer)
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
		len(unknown), op.Election.Shard, names(unknown), allowed, max(1, d.v.spec.MinSyncReplicas))
}

// givenUp lists the unseen nodes a failover goes on without because the user named them
// (Spec.FailoverWithout) and the quorum needed it: writes only they hold are lost.
func (d *decider) givenUp(op Operation) []*Node {
	allowed := max(0, d.v.spec.MinSyncReplicas-1)
	unknown := d.unknown(op.Election.Shard, op.Election.Writer)
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
		// In cluster mode, among equals, the node that serves the shard's slots: a primary
		// without slots cannot take them (Promote only opens it), and the one that serves
		// them refuses to follow anyone: elected, the one without slots would wait for good.
		// Before the offset: equals that are apart by offset are a node restarted from its
		// append-only file (offset 0, placed by its key count) and one measured in the history,
		// whose offsets say nothing of which holds more (found by the simulator: the measured
		// node was elected beside a slot owner holding as many keys, which the failover then
		// found serving instead of it, and the two alternated for good).
		if first, decided := servesSlotsBefore(a.Node, b.Node); decided {
			return first
		}
		if a.Valkey.Offset != b.Valkey.Offset {
			return a.Valkey.Offset > b.Valkey.Offset
		}
		ap, bp := a.Valkey.Role == RolePrimary, b.Valkey.Role == RolePrimary
		if ap != bp {
			return ap
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

// electedByKeys names the candidates the election of c among cands preferred c to by key
// count alone, and c's key count; "" when it did not rest on key counts: such a candidate's
// data could be placed only by its key count (restarted from its append-only file), so
// writes that overwrote keys may be counted wrong (Reason.OverByKeys).
func electedByKeys(l lineage, cands []candidate, c *Node) (string, int64) {
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
		return "", 0
	}
	return names(by), me.Valkey.Keys
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
