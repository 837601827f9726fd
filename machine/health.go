package machine

import "fmt"

// primaryHealth is what the observation says about a shard's recorded primary.
type primaryHealth int

const (
	// primaryHealthy: the recorded process answers and is a primary.
	primaryHealthy primaryHealth = iota
	// primaryUnreachable: it does not answer, fewer than FailureThreshold probes failed.
	primaryUnreachable
	// primarySuspected: FailureThreshold probes failed; it may still be alive behind a
	// partition, so an isolated primary must be given FenceTimeout to stop accepting writes.
	primarySuspected
	// primaryGone: the recorded process cannot accept writes any more: its pod is gone or not
	// running, it restarted (a restarted node comes up fenced), or it is no longer a primary.
	primaryGone
)

// primaryHealth judges the recorded primary of shard s.
func (d *decider) primaryHealth(p Persisted, s int) (primaryHealth, string) {
	if s >= len(p.Shards) || p.Shards[s].Primary == "" {
		return primaryHealthy, ""
	}
	rec := p.Shards[s]
	n := d.v.node(rec.Primary)
	switch {
	case n == nil || !n.Pod.Exists:
		return primaryGone, fmt.Sprintf("pod of primary %s is gone", rec.Primary)
	case n.Reachable && n.Valkey.RunID != rec.RunID:
		return primaryGone, fmt.Sprintf("primary %s restarted (run id %s, was %s)", rec.Primary, short(n.Valkey.RunID), short(rec.RunID))
	case n.Reachable && n.Valkey.Role != RolePrimary:
		return primaryGone, fmt.Sprintf("primary %s is no longer a primary", rec.Primary)
	case n.Reachable:
		if o := d.servesInsteadOf(s, rec, n); o != nil {
			return primaryGone, fmt.Sprintf("primary %s serves none of the shard's slots (it takes no write), while %s serves them holding its data", rec.Primary, o.Name)
		}
		return primaryHealthy, ""
	case n.Pod.Restarted:
		return primaryGone, fmt.Sprintf("primary %s restarted (its container restarted; the new process does not answer yet)", rec.Primary)
	case !n.Pod.Running:
		return primaryGone, fmt.Sprintf("primary %s is not running", rec.Primary)
	case n.FailedProbes >= d.v.spec.FailureThreshold:
		if heard := d.hearPrimary(s, n); len(heard) > 0 {
			// The operator is cut off, not the primary: failing over would cut a serving
			// primary off its replicas (and its clients off writes) for nothing.
			return primaryUnreachable, fmt.Sprintf("primary %s unreachable for %d probes, but %s still hear from it: no failover while it serves its replicas", rec.Primary, n.FailedProbes, names(heard))
		}
		return primarySuspected, fmt.Sprintf("primary %s unreachable for %d probes", rec.Primary, n.FailedProbes)
	default:
		return primaryUnreachable, fmt.Sprintf("primary %s unreachable for %d of %d probes", rec.Primary, n.FailedProbes, d.v.spec.FailureThreshold)
	}
}

// servesInsteadOf returns, in cluster mode, the node of shard s that serves the shard's slots
// with keys, and data that contains the recorded primary n's, while n serves no slot and has
// none open (nil: none). n then accepts no client write (every key is another node's), and the other node
// refuses to follow it while it serves slots: a failover to it loses nothing, where waiting
// would wait for a user to empty it (regressions/cluster-stray-with-the-data-takes-over.sched).
// A stray without keys gives its
// slots to n instead (strayOwner); one holding data n lacks is left to the user.
func (d *decider) servesInsteadOf(s int, rec ShardRecord, n *Node) *Node {
	// A slot open on n (importing, under ASKING) takes writes: not without them (found by a
	// review: a resharding's import interrupted on a node that then lost its own slots).
	if d.v.spec.Mode != ModeCluster || n.Valkey.Role != RolePrimary || len(n.Valkey.Slots) > 0 || len(n.Valkey.OpenSlots) > 0 {
		return nil
	}
	var l *lineage
	for _, o := range d.v.shard(s) {
		if o == n || !usable(o) || o.Valkey.Role != RolePrimary || len(o.Valkey.Slots) == 0 || o.Valkey.Keys == 0 {
			continue
		}
		if l == nil {
			x := d.lineage(s, rec.History)
			l = &x
		}
		if l.covers(o.Valkey, n.Valkey) {
			return o
		}
	}
	return nil
}

// hearPrimary lists the reachable replicas of shard s that follow the primary n (by its pod
// IP) and heard from it within the last seconds.
func (d *decider) hearPrimary(s int, n *Node) []*Node {
	var out []*Node
	for _, r := range d.v.shard(s) {
		if r != n && usable(r) && r.Valkey.HeardFromPrimary && follows(r, n) {
			out = append(out, r)
		}
	}
	return out
}

// short abbreviates a run or replication ID for messages.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// lostShard finds the first shard whose recorded primary is lost and may be failed over, and
// builds the failover operation for it. The rules of when NOT to fail over live here: a
// reachable primary is never replaced; an unreachable one only after FailureThreshold failed
// probes; never without a quorum of the shard visible; never without a node to promote.
func (d *decider) lostShard(p Persisted, only int, writer *Operation) (Operation, string, bool) {
	for s := range p.Shards {
		if only >= 0 && s != only {
			continue
		}
		if op, why, ok := d.failoverOf(p, s, writer); ok {
			return op, why, true
		}
	}
	return Operation{}, "", false
}

// failoverOf decides whether shard s's primary is to be failed over: the operation and why,
// or why not. prev, when not nil, is the failover in progress whose elected node is lost:
// its writer stays the writer (see Operation.Writer). An elected node lost while unpromoted
// (Operation.Unpromoted: a replica when elected, its promotion not recorded yet) was one more
// node of the lost history (nobody followed it, nobody wrote to it): the re-election starts
// from that history again. From the history the election recorded for it instead, the
// writer's data beyond the elected node's offset, or in a history only a key-count link tied
// to the line, would be off the line, and a node holding less would be promoted over the
// writer back with every write (regressions/re-election-forgets-the-deposed-writer.sched).
func (d *decider) failoverOf(p Persisted, s int, prev *Operation) (Operation, string, bool) {
	health, why := d.primaryHealth(p, s)
	if health != primarySuspected && health != primaryGone {
		return Operation{}, why, false
	}
	rec := p.Shards[s]
	op := Operation{Shard: s, Lost: rec.Primary, LostRunID: rec.RunID, LostHistory: rec.History,
		Writer: rec.Primary, WriterRunID: rec.RunID, KnownFenced: health == primaryGone}
	if prev != nil {
		op.Writer, op.WriterRunID, op.KnownFenced = prev.Writer, prev.WriterRunID, prev.KnownFenced
		if prev.Unpromoted {
			op.LostHistory = prev.LostHistory
		}
	}
	if ok, whyNot := d.quorum(op); !ok {
		return Operation{}, why + "; no failover: " + whyNot, false
	}
	if _, _, ok := d.failoverCandidate(op); !ok {
		_, whyNot := elect(d.candidates(op))
		return Operation{}, why + "; no failover: " + whyNot, false
	}
	return op, fmt.Sprintf("shard %d: %s", s, why), true
}

// failoverCandidate elects the node to promote for op, or says why there is none. When no
// node holds the shard's history and every node is visible, that history is gone whatever the
// machine does: it then reseeds a new history (Reseed) on the node holding the most data (a
// node of an older, forked history still holds more than an empty one), lowest ordinal among
// equals. In cluster mode, among equals, a node that serves the shard's slots comes first,
// then a replica: Promote gives a replica its primary's slots (TAKEOVER) and gives no slots to a
// node that is a primary already, so a primary without slots would be promoted to serve nothing
// while the node that serves them (restarted empty, back from nodes.conf) refuses to follow it.
func (d *decider) failoverCandidate(op Operation) (*Node, bool, bool) {
	l, cands := d.candidates(op)
	if len(cands) > 0 {
		c, _ := elect(l, cands)
		return c, false, c != nil
	}
	if len(d.unknown(op.Shard, "")) > 0 {
		return nil, false, false
	}
	var best *Node
	for _, n := range d.v.shard(op.Shard) {
		if !usable(n) {
			continue
		}
		if best == nil || moreData(n, best) || (!moreData(best, n) && d.reseedRank(n) > d.reseedRank(best)) {
			best = n
		}
	}
	return best, true, best != nil
}

// reseedRank orders nodes holding equal data for a reseed (see failoverCandidate).
func (d *decider) reseedRank(n *Node) int {
	switch {
	case d.v.spec.Mode != ModeCluster:
		return 0
	case len(n.Valkey.Slots) > 0:
		return 2
	case n.Valkey.Role == RoleReplica:
		return 1
	}
	return 0
}
