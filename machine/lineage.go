package machine

import (
	"fmt"
	"sort"
	"strings"
)

// Replication histories, in Valkey's terms: every primary has a replication ID (ReplID) and
// an offset. A replica that syncs takes its primary's ID. A promoted node (and a node that
// restarted from its persisted data) gets a fresh ID and remembers the one it continues as
// ReplID2, valid for offsets below SecondOffset (second_repl_offset is exclusive). Valkey
// itself uses exactly these fields to decide whether a replica can continue from a primary
// (partial resync); the machine uses them the same way to decide whose data contains whose.

// claimCovered reports whether node b's data contains the history id up to offset pos.
func claimCovered(b Valkey, id string, pos int64) bool {
	if id == "" {
		return false
	}
	if id == b.ReplID && pos <= b.Offset {
		return true
	}
	return b.ReplID2 != "" && id == b.ReplID2 && pos < b.SecondOffset
}

// covers reports whether b's data contains all of a's (a could continue from b by partial
// resync). An empty node is contained in anything. A node that switched to a new ID but has
// written nothing since (Offset == SecondOffset-1) is judged by the history it continues:
// that is the case of a node restarted from its data, or promoted and still fenced.
func covers(b, a Valkey) bool {
	if a.Offset == 0 {
		return true
	}
	if claimCovered(b, a.ReplID, a.Offset) {
		return true
	}
	return a.ReplID2 != "" && a.Offset == a.SecondOffset-1 && claimCovered(b, a.ReplID2, a.Offset)
}

// inLineage reports whether a node's data belongs to the recorded history h of a shard: it is
// in h, it continues h (it was promoted from h, restarted from data of h, or follows a node
// that took over h), or it is a prefix of the history h continues.
func inLineage(n Valkey, h History) bool {
	if h.ID == "" {
		return false
	}
	if n.ReplID == h.ID || (n.ReplID2 != "" && n.ReplID2 == h.ID) {
		return true
	}
	return h.PrevID != "" && n.ReplID == h.PrevID && n.Offset < h.PrevEnd
}

// candidates are the nodes of a shard that may become its primary after the loss of the
// primary whose history was h: they answer, are not loading, and hold data of h. An empty
// restarted node has a fresh history and no ReplID2, so it is never among them.
func (d *decider) candidates(shard int, h History) []*Node {
	var out []*Node
	for _, n := range d.v.shard(shard) {
		if usable(n) && inLineage(n.Valkey, h) {
			out = append(out, n)
		}
	}
	return out
}

// unknown lists the nodes of a shard, other than except, whose data the operator cannot see
// now but which may hold data: unreachable or loading nodes, and, with persistence, nodes
// whose pod is gone or not running (their volume keeps the data).
func (d *decider) unknown(shard int, except string) []*Node {
	var out []*Node
	for _, n := range d.v.shard(shard) {
		if n.Name == except {
			continue
		}
		switch {
		case n.Reachable && !n.Valkey.Loading:
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

// quorum reports whether enough of a shard is visible to promote safely. A write
// acknowledged with WAIT MinSyncReplicas is on that many replicas, so with at most
// MinSyncReplicas-1 replicas unseen at least one holder is seen; and an isolated old primary
// can keep no more than MinSyncReplicas-1 replicas, below its min-replicas-to-write. With
// MinSyncReplicas 0 nothing bounds what an unseen replica holds, so all must be seen.
func (d *decider) quorum(shard int, lost string) (bool, string) {
	allowed := d.v.spec.MinSyncReplicas - 1
	if allowed < 0 {
		allowed = 0
	}
	unknown := d.unknown(shard, lost)
	if len(unknown) <= allowed {
		return true, ""
	}
	return false, fmt.Sprintf("%d node(s) of shard %d unseen (%s), at most %d allowed", len(unknown), shard, names(unknown), allowed)
}

// elect picks the node to promote among candidates: the one whose data contains every other
// candidate's (never one behind another, never across a fork). Among equals it prefers the
// highest offset, then a node that is already a primary (replicas continue from it without a
// full sync), then the lowest ordinal. It returns nil when no candidate contains all others:
// the histories forked and promoting any would drop the others' writes.
func elect(cands []*Node) (*Node, string) {
	if len(cands) == 0 {
		return nil, "no node holds the shard's data"
	}
	sorted := append([]*Node(nil), cands...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
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
			if o != c && !covers(c.Valkey, o.Valkey) {
				dominates = false
				break
			}
		}
		if dominates {
			return c, ""
		}
	}
	return nil, "candidates' histories forked: " + names(cands)
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
	return History{ID: n.Valkey.ReplID, PrevID: n.Valkey.ReplID2, PrevEnd: n.Valkey.SecondOffset}
}
