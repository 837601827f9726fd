package machine

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

// primaryHealth judges the recorded primary of shard s, and says why when it is not healthy.
func (d *decider) primaryHealth(p Persisted, s int) (primaryHealth, PrimaryFault) {
	if s >= len(p.Shards) || p.Shards[s].Primary == "" {
		return primaryHealthy, PrimaryFault{}
	}
	rec := p.Shards[s]
	n := d.v.node(rec.Primary)
	f := PrimaryFault{Primary: rec.Primary}
	switch {
	case n == nil || !n.Pod.Exists:
		f.Kind = FaultPodGone
		return primaryGone, f
	case n.Reachable && n.Valkey.RunID != rec.RunID:
		f.Kind, f.RunID, f.RunIDWas = FaultRestarted, short(n.Valkey.RunID), short(rec.RunID)
		return primaryGone, f
	case n.Reachable && n.Valkey.Role != RolePrimary:
		f.Kind = FaultNotPrimary
		return primaryGone, f
	case n.Reachable:
		if o := d.servesInsteadOf(s, rec, n); o != nil {
			f.Kind, f.Server = FaultServesNoSlots, o.Name
			return primaryGone, f
		}
		return primaryHealthy, PrimaryFault{}
	case n.Pod.Restarted:
		f.Kind = FaultContainerRestarted
		return primaryGone, f
	case !n.Pod.Running:
		f.Kind = FaultNotRunning
		return primaryGone, f
	case n.FailedProbes >= d.v.spec.FailureThreshold:
		f.Probes = n.FailedProbes
		if heard := d.hearPrimary(s, n); len(heard) > 0 {
			// The operator is cut off, not the primary: failing over would cut a serving
			// primary off its replicas (and its clients off writes) for nothing.
			f.Kind, f.Heard = FaultHeard, names(heard)
			return primaryUnreachable, f
		}
		f.Kind = FaultSuspected
		return primarySuspected, f
	default:
		f.Kind, f.Probes, f.Threshold = FaultUnreachable, n.FailedProbes, d.v.spec.FailureThreshold
		return primaryUnreachable, f
	}
}

// servesInsteadOf returns, in cluster mode, the node of shard s that serves the shard's slots
// with keys, and data that contains the recorded primary n's, while n serves no slot and has
// none open (nil: none). n then accepts no client write (every key is another node's), and the other node
// refuses to follow it while it serves slots: a failover to it loses nothing, where waiting
// would wait for a user to empty it (regressions/cluster-stray-with-the-data-takes-over.sched).
// Where only key counts compare the two, a tie goes to the node serving the slots
// (slotOwnerTied).
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
		// A node whose data the record replaces (a deposed pod) serves the slots only until
		// n takes them over (strayOwner).
		if o == n || !usable(o) || o.Valkey.Role != RolePrimary || len(o.Valkey.Slots) == 0 || o.Valkey.Keys == 0 || discarded(d.p, rec, o) != "" {
			continue
		}
		if l == nil {
			x := d.lineage(s, rec.History)
			l = &x
		}
		if l.covers(o.Valkey, n.Valkey) || d.slotOwnerTied(s, rec, o, n) {
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
func (d *decider) lostShard(p Persisted, only int, writer *Operation) (Operation, PrimaryFault, bool) {
	for s := range p.Shards {
		if only >= 0 && s != only {
			continue
		}
		if op, why, ok := d.failoverOf(p, s, writer); ok {
			return op, why.Fault, true
		}
	}
	return Operation{}, PrimaryFault{}, false
}

// failoverOf decides whether shard s's primary is to be failed over: the operation, and what
// it found (failoverWhy: what is wrong with the primary, and why a failover is held back, in
// words or as a wait of its own kind such as WaitDeposedMayHoldTheLine). prev, when not nil,
// is the failover in progress whose elected node is lost: its writer stays the writer (see
// Election.Writer). An elected node lost while unpromoted (Election.Unpromoted: a replica when
// elected, its promotion not recorded yet) was one more node of the lost history (nobody
// followed it, nobody wrote to it): the re-election starts from that history again. From the
// history the election recorded for it instead, the writer's data beyond the elected node's
// offset, or in a history only a key-count link tied to the line, would be off the line, and a
// node holding less would be promoted over the writer back with every write
// (regressions/re-election-forgets-the-deposed-writer.sched).
func (d *decider) failoverOf(p Persisted, s int, prev *Operation) (Operation, failoverWhy, bool) {
	health, fault := d.primaryHealth(p, s)
	why := failoverWhy{Shard: s, Fault: fault}
	if health != primarySuspected && health != primaryGone {
		return Operation{}, why, false
	}
	rec := p.Shards[s]
	op := Operation{Election: Election{Shard: s, Lost: rec.Primary, LostRunID: rec.RunID, LostHistory: rec.History, Writer: rec.Primary, WriterRunID: rec.RunID, KnownFenced: health == primaryGone}}
	if prev != nil {
		op.Election.Writer, op.Election.WriterRunID, op.Election.KnownFenced = prev.Election.Writer, prev.Election.WriterRunID, prev.Election.KnownFenced
		if prev.Election.Unpromoted {
			op.Election.LostHistory = prev.Election.LostHistory
		}
	}
	if ok, whyNot := d.quorum(op); !ok {
		why.HeldBack = whyNot
		return Operation{}, why, false
	}
	if _, _, ok := d.failoverCandidate(op); !ok {
		if w := d.noElection(op); w.Kind == WaitDeposedMayHoldTheLine {
			why.Held = w
		} else {
			why.HeldBack = w.Detail
		}
		return Operation{}, why, false
	}
	why.Due = true
	return op, why, true
}

// noElection is why failoverCandidate elects no node for op: a deposed pod that may hold the
// line (deposedmayhold.go), or no candidate holding every other's data.
func (d *decider) noElection(op Operation) Wait {
	l, cands := d.candidates(op)
	c, why := elect(l, cands)
	if c != nil {
		if w, held := d.deposedMayHoldTheLine(op, cands, c); held {
			return w
		}
	}
	return Wait{Kind: WaitNoPromotable, Shard: op.Election.Shard, Detail: why}
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
		if c != nil {
			if _, held := d.deposedMayHoldTheLine(op, cands, c); held {
				return nil, false, false
			}
		}
		return c, false, c != nil
	}
	if len(d.unknown(op.Election.Shard, "")) > 0 {
		return nil, false, false
	}
	var best *Node
	for _, n := range d.v.shard(op.Election.Shard) {
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
