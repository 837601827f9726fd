package machine

import (
	"fmt"
	"strings"
)

// Deposed pods (ShardRecord.Deposed). An unplanned failover replaces a primary that may go on
// accepting writes until it is fenced (isolated, it counts its replicas for a while), and one
// that crashed leaves on its volume writes its replicas never got. Those writes are off the
// shard's line: the elected node's data is the line from then on. While the old primary
// reports its place (its old replication ID beyond where the new history left it) the
// lineage keeps it out of every election. Restarted from its append-only file it reports a
// fresh ID at offset 0 with all its keys (docs/failover.md, "Telling data from no data"), and
// a comparison by key count would take the writes off the line for the line's: the
// simulator found a deposed primary, restarted before it was resynced, elected over a replica
// holding a WAIT-acknowledged write (2 keys against 1), and a hibernation stopping before the
// deposed primary was resynced, whose wake elected it by key count (5 keys of its own against
// 1).
//
// So the record keeps, per shard, each deposed pod with how far into the line its data can
// reach: the elected node's key count and place (history, offset) at the election. Against a
// node of the line that reaches that place, a deposed pod holds nothing it lacks;
// against an unmeasured one, only its line part counts (at most the elected node's keys).
// Before the machine asks a deposed pod to follow (a full sync then replaces its data), it
// records that it resyncs (deposed-resync) with its key count then: restarted before the
// machine saw it on the line, with more keys it synced (it is compared as any node restarted
// from its file), else it counts as what it was deposed with. Once it answers with the line's
// data (or none), deposed-resynced forgets it (any transition does, forgetResynced: in cluster
// mode Valkey may make it follow by itself). A hibernation waits for that: the wake starts
// from the nodes' data alone.

// deposedOf is the record's entry for pod, if any.
func (rec ShardRecord) deposedOf(pod string) (DeposedPod, bool) {
	return deposedIn(rec.Deposed, pod)
}

// deposedIn is ms's entry for pod, if any.
func deposedIn(ms []DeposedPod, pod string) (DeposedPod, bool) {
	for _, m := range ms {
		if m.Pod == pod {
			return m, true
		}
	}
	return DeposedPod{}, false
}

// deposeIdleClaims returns ms (the shard's deposed pods) with the pods of shard s whose
// claims are idle (Observation.IdleClaims: claims with no pod on places the objects do not
// ask for) deposed by the election of c, whose history h is the line from now on. The failover could not weigh them, and their
// data reaches into the line at most as far as c's: the rest is off it. Started again by a
// scale-up after an append-only restart, such a volume reports a fresh ID with all its keys,
// and a later election by key count would take those writes for the line's
// (regressions/scaled-away-volume-back-after-a-failover.sched). A pod deposed before (and not recorded as
// resyncing) keeps its mark while the new line reaches where the old one left it (the mark
// still bounds what it may hold of the line); else the line left it at c, with at most the
// fewer keys of the two.
func (d *decider) deposeIdleClaims(s int, c *Node, h History, ms []DeposedPod) ([]DeposedPod, []string) {
	l := d.lineage(s, h)
	var deposed []string
	for _, cl := range d.obs.IdleClaims {
		if cl.Shard != s || cl.Name == c.Name {
			continue
		}
		m := deposedAt(cl.Name, c)
		// A mark recorded as resyncing bounds nothing any more (the pod may have synced past
		// where any line left it: DeposedPod.synced), so the election's fresh mark replaces it:
		// kept, a returning volume with more keys than its resync count would win a later
		// election by key count.
		if old, ok := deposedIn(ms, cl.Name); ok && !old.Resyncing {
			if old.Left.ID == "" || l.reaches(c.Valkey, old.Left.ID, old.Left.End-1) {
				continue
			}
			m.Keys = min(m.Keys, old.Keys)
		}
		ms = withDeposed(ms, m)
		deposed = append(deposed, cl.Name)
	}
	return ms, deposed
}

// deposedAt is pod's mark when c is elected: the line starts from c's data, its history up to
// its offset and its key count.
func deposedAt(pod string, c *Node) DeposedPod {
	m := DeposedPod{Pod: pod, Keys: c.Valkey.Keys}
	if !c.Valkey.empty() {
		m.Left = HistoryLink{ID: c.Valkey.ReplID, End: c.Valkey.Offset + 1}
	}
	return m
}

// withoutDeposed returns ms without pod's entry (a new slice: records share theirs).
func withoutDeposed(ms []DeposedPod, pod string) []DeposedPod {
	var out []DeposedPod
	for _, m := range ms {
		if m.Pod != pod {
			out = append(out, m)
		}
	}
	return out
}

// withDeposed returns ms with pod's entry replaced by m (a new slice).
func withDeposed(ms []DeposedPod, m DeposedPod) []DeposedPod {
	return append(withoutDeposed(ms, m.Pod), m)
}

// synced reports whether v, the deposed pod's node now, holds a prefix of the line for sure:
// it resyncs and holds more keys than when its resync was recorded (fenced and following
// nothing, only a sync from the line gives it more). Such a pod may be the only replica that
// acknowledged a WAIT write before it restarted; taken for what it was deposed with, no node
// would hold everything and the shard would wait for good.
func (m DeposedPod) synced(v Valkey) bool {
	return m.Resyncing && v.Keys > m.ResyncKeys
}

// awaitsResync reports whether pod is deposed and not yet recorded as resyncing: the machine
// does not ask it to follow before deposed-resync is recorded.
func (rec ShardRecord) awaitsResync(pod string) bool {
	m, ok := rec.deposedOf(pod)
	return ok && !m.Resyncing
}

// onTheLine reports whether n answers holding the shard's line (a prefix of it, in a history
// of the record's lineage) or no data at all.
func (d *decider) onTheLine(s int, rec ShardRecord, n *Node) bool {
	if !usable(n) {
		return false
	}
	if n.Valkey.empty() {
		return true
	}
	l := d.lineage(s, rec.History)
	return !l.unmeasured(n.Valkey) && l.contains(n.Valkey)
}

// resynced reports whether the deposed pod m of shard s (record rec) answers with the line's
// data or none, and says so.
func (d *decider) resynced(s int, rec ShardRecord, m DeposedPod) (string, bool) {
	n := d.v.node(m.Pod)
	if n == nil || n.Shard != s || !d.onTheLine(s, rec, n) {
		return "", false
	}
	held := fmt.Sprintf("holds the line's data (%s at offset %d)", short(n.Valkey.ReplID), n.Valkey.Offset)
	if n.Valkey.empty() {
		held = "holds no data"
	}
	return fmt.Sprintf("shard %d: %s, deposed by a failover, %s: no writes off the line are left on its volume", s, m.Pod, held), true
}

func guardDeposedResynced(d *decider) (outcome, bool) {
	for s, rec := range d.p.Shards {
		for _, m := range rec.Deposed {
			said, ok := d.resynced(s, rec, m)
			if !ok {
				continue
			}
			next := d.p.Clone()
			next.Shards[s].Deposed = withoutDeposed(rec.Deposed, m.Pod)
			return outcome{next: next, message: said}, true
		}
	}
	return outcome{}, false
}

// forgetResynced forgets, with any transition taken, the deposed pods that answer with the
// line's data or none (deposed-resynced does it when no other transition fires). Valkey makes
// a deposed primary the replica of the node that took its slots over, of its own shard id, by
// itself: it can sync the line and be restarted from its file before the next decision, and
// its mark would then count its keys as what it was deposed with, below the line's writes it
// synced, and elect a node holding fewer of them.
func (d *decider) forgetResynced(shards []ShardRecord) ([]ShardRecord, string) {
	var said []string
	out := shards
	for s, rec := range shards {
		for _, m := range rec.Deposed {
			msg, ok := d.resynced(s, rec, m)
			if !ok {
				continue
			}
			if len(said) == 0 {
				out = append([]ShardRecord(nil), shards...)
			}
			out[s].Deposed = withoutDeposed(out[s].Deposed, m.Pod)
			said = append(said, msg)
		}
	}
	return out, strings.Join(said, "; ")
}

// toResync reports whether the deposed pod m of shard s (record rec) is to be recorded as
// resyncing now: it answers off the line while the recorded primary serves, so converge
// would ask it to follow. It returns the primary, for messages.
func (d *decider) toResync(s int, rec ShardRecord, m DeposedPod) (*Node, bool) {
	prim := d.v.node(rec.Primary)
	if m.Resyncing || !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary {
		return nil, false
	}
	n := d.v.node(m.Pod)
	if n == nil || n.Shard != s || n == prim || !usable(n) || d.onTheLine(s, rec, n) {
		return nil, false
	}
	return prim, true
}

func resyncMessage(s int, m DeposedPod, n, prim *Node) string {
	return fmt.Sprintf("shard %d: %s, deposed by a failover, resyncs from %s (%d keys, its volume may hold writes off the line)", s, m.Pod, prim.Name, n.Valkey.Keys)
}

func guardDeposedResync(d *decider) (outcome, bool) {
	for s, rec := range d.p.Shards {
		for i, m := range rec.Deposed {
			prim, ok := d.toResync(s, rec, m)
			if !ok {
				continue
			}
			next := d.p.Clone()
			next.Shards[s].Deposed = d.withResync(rec.Deposed, i)
			return outcome{next: next, message: resyncMessage(s, m, d.v.node(m.Pod), prim)}, true
		}
	}
	return outcome{}, false
}

// withResync returns ms (a new slice: records share theirs) with its i-th pod recorded as
// resyncing, with its key count now.
func (d *decider) withResync(ms []DeposedPod, i int) []DeposedPod {
	out := append([]DeposedPod(nil), ms...)
	out[i].Resyncing, out[i].ResyncKeys = true, d.v.node(out[i].Pod).Valkey.Keys
	return out
}

// resyncDeposed records, with any transition taken, the resync of the deposed pods that its
// decision's converge asks to follow (deposed-resync does it when no other transition fires):
// a failover's completion re-points the old primary back from its volume in the same decision,
// as it did before deposed pods were recorded: waiting for the next decision, the old primary
// could miss a WAIT-acknowledged write that the next failover needs.
func (d *decider) resyncDeposed(shards []ShardRecord) ([]ShardRecord, string) {
	var said []string
	out := shards
	for s, rec := range shards {
		for i, m := range rec.Deposed {
			prim, ok := d.toResync(s, rec, m)
			if !ok {
				continue
			}
			if len(said) == 0 {
				out = append([]ShardRecord(nil), shards...)
			}
			out[s].Deposed = d.withResync(out[s].Deposed, i)
			said = append(said, resyncMessage(s, m, d.v.node(m.Pod), prim))
		}
	}
	return out, strings.Join(said, "; ")
}

// deposedPending says which deposed pods a hibernation waits for ("": none): the wake elects
// by the nodes' data, where a deposed pod's writes off the line could not be told from the
// line's. Pods the spec no longer asks for do not hold it back (their volumes do not wake).
func (d *decider) deposedPending(p Persisted) string {
	var pods []string
	for _, rec := range p.Shards {
		for _, m := range rec.Deposed {
			if n := d.v.node(m.Pod); n == nil || n.Ordinal >= d.specPods() {
				continue
			}
			pods = append(pods, m.Pod)
		}
	}
	if len(pods) == 0 {
		return ""
	}
	return fmt.Sprintf("%s, deposed by a failover, to resync first (the wake elects by the nodes' data, and writes off the line on its volume could not be told from the line's; a pod that cannot come back holds the hibernation until its claim and pod are deleted, which gives up what only its volume holds, or spec.hibernate is set to false)", strings.Join(pods, ", "))
}

// deposedWaits is why converge does not ask the deposed pod n to follow yet: deposed-resync
// is recorded first.
func deposedWaits(s int, n *Node) Wait {
	return Wait{Kind: WaitDeposedResync, Shard: s, Node: n.Name}
}
