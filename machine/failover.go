package machine

import (
	"fmt"
	"strings"
	"time"
)

// FailingOver replaces the primary of one shard (Op.Shard). Unplanned, in steps that each
// survive an operator restart because each is either recorded or visible in the world:
//
//  1. Freeze: every visible node that follows anything is detached, so no offset moves any
//     more and an isolated old primary loses the replicas it needs to accept writes
//     (min-replicas-to-write). Any master open for writes is fenced.
//  2. Elect: among the nodes that hold the shard's lineage, the one whose data contains all
//     the others' is recorded as the shard's primary (candidate-elected) before anything is
//     done to it, so that if it restarts from its data mid-way the machine still knows its
//     data is the shard's.
//  3. Promote it (serves replicas, writes still fenced); candidate-promoted records its new
//     replication ID at once; re-point the others to it.
//  4. Wait until the old primary cannot accept writes (known dead, observed fenced or
//     demoted, or FenceTimeout after the election), then failover-complete records the
//     promoted node's new history; Steady opens it for writes.
//
// Planned (a requested switchover): HandOver (FAILOVER TO) to the target; failover-complete
// records it. The hand-over itself keeps at most one writable primary.

func guardFailoverComplete(d *decider) (outcome, bool) {
	p := d.p
	op := p.Op
	s := op.Shard
	if s >= len(p.Shards) {
		return outcome{}, false
	}
	next := p
	next.Op = Operation{}
	if op.Planned {
		t, ok := d.handedOver(p, s)
		if !ok {
			return outcome{}, false
		}
		next.Shards = recordPrimary(p.Shards, s, t)
		msg := fmt.Sprintf("shard %d: switched over from %s to %s", s, op.Lost, t.Name)
		if op.TargetPods > 0 {
			msg += fmt.Sprintf(" for the scale-down to %d pod(s) per shard", op.TargetPods)
		}
		if op.Leaving {
			msg += fmt.Sprintf(" before %s's pod stops", op.Lost)
		}
		return outcome{next: next, message: msg}, true
	}
	if op.Candidate == "" {
		return outcome{}, false
	}
	rec := p.Shards[s]
	c := d.v.node(rec.Primary)
	if !alive(c, rec.RunID) || !servesReplicas(c) {
		return outcome{}, false
	}
	fencedBy, ok := d.oldPrimaryFenced(op)
	if !ok {
		return outcome{}, false
	}
	if _, newest := d.claimNewest(p, s, c); !newest {
		return outcome{}, false
	}
	next.Shards = append([]ShardRecord(nil), p.Shards...)
	next.Shards[s].History = historyOf(c).continuing(rec.History)
	msg := fmt.Sprintf("shard %d: %s replaces %s (%s)", s, c.Name, op.Writer, fencedBy)
	if c.Name == op.Writer {
		// Elected again (back from its volume with the most data; in cluster mode also when
		// it served the slots the elected node could not: servesInsteadOf): the writer itself
		// holds every write it took.
		msg = fmt.Sprintf("shard %d: %s, the primary lost before, serves again: elected for its data", s, c.Name)
		if d.v.spec.Mode == ModeCluster {
			msg += " and the shard's slots"
		}
	}
	if op.Reseed {
		msg += "; DATA LOST, new history"
	}
	if op.Preempted != "" {
		msg += fmt.Sprintf("; %s resumes from Steady", op.Preempted)
	}
	return outcome{next: next, message: msg}, true
}

// oldPrimaryFenced reports whether the writer (the last primary that may have accepted
// writes) can no longer accept writes, and how that is known.
func (d *decider) oldPrimaryFenced(op Operation) (string, bool) {
	if op.KnownFenced {
		return "old primary known dead", true
	}
	if why, ok := d.oldPrimaryGone(op); ok {
		return why, true
	}
	// FenceTimeout 0 means none is configured: only evidence counts then.
	if d.v.spec.FenceTimeout > 0 && !op.ElectedAt.IsZero() && op.ElectedClock == d.obs.Clock && !d.obs.Time.Before(op.fenceStart().Add(d.v.spec.FenceTimeout)) {
		if op.fenceStart().Before(op.ElectedAt) {
			return fmt.Sprintf("fence timeout %s passed since its replicas were sealed, the last at %s", d.v.spec.FenceTimeout, op.fenceStart().Format("15:04:05.000")), true
		}
		return fmt.Sprintf("fence timeout %s passed", d.v.spec.FenceTimeout), true
	}
	return "", false
}

// fenceStart is the moment an isolated writer's FenceTimeout runs from: the seal of the last
// replica when FenceFrom says every visible one was sealed unlinked, otherwise the election.
func (op Operation) fenceStart() time.Time {
	if !op.FenceFrom.IsZero() && op.FenceFrom.Before(op.ElectedAt) {
		return op.FenceFrom
	}
	return op.ElectedAt
}

// fenceFrom is the last moment a node of the shard visible now may have given the writer an
// acknowledgement, when that is before now: each was sealed, on this operator's clock, while it
// had no connection to any primary, so it gave none after its seal (Seal). Any other node may
// have until it was detached, which is before this election but not known when: the result is
// then zero (the fence runs from the election). Nodes not visible are the quorum's business:
// fewer of them than min-replicas-to-write can keep an isolated writer writable on their own.
func (d *decider) fenceFrom(op Operation) time.Time {
	var from time.Time
	for _, n := range d.v.shard(op.Shard) {
		if n.Name == op.Writer || !n.Reachable {
			continue
		}
		seal := n.Valkey.Sealed
		if !seal.Unlinked || seal.Clock != d.obs.Clock || seal.At.IsZero() || seal.At.After(d.obs.Time) {
			return time.Time{}
		}
		if seal.At.After(from) {
			from = seal.At
		}
	}
	return from
}

// sealReplicas seals the replicas of shard s that lost their link to prim, the recorded
// primary that does not answer (see Seal): if it is isolated rather than dead, none of them
// can link to it again and be counted by it, and a failover's fence can run from the seal.
// A node sealed while it still had a connection is sealed again once it has none.
func (d *decider) sealReplicas(s int, prim *Node, b *actionList) {
	if prim == nil {
		return
	}
	for _, n := range d.v.shard(s) {
		if n == prim || !usable(n) || !follows(n, prim) || n.Valkey.LinkUp {
			continue
		}
		if seal := n.Valkey.Sealed; seal.Unlinked && seal.Clock == d.obs.Clock {
			continue
		}
		b.add(Seal{Shard: s, Node: n.Name, RunID: n.Valkey.RunID})
	}
}

// oldPrimaryGone reports evidence, in this observation, that the writer process cannot
// accept writes.
func (d *decider) oldPrimaryGone(op Operation) (string, bool) {
	old := d.v.node(op.Writer)
	switch {
	case old == nil || !old.Pod.Exists || !old.Pod.Running:
		return "old primary's pod gone", true
	case old.Reachable && old.Valkey.RunID != op.WriterRunID:
		return "old primary restarted fenced", true
	case old.Reachable && fenced(old):
		return "old primary observed fenced", true
	}
	return "", false
}

func guardPrimaryRecovered(d *decider) (outcome, bool) {
	op := d.p.Op
	if op.Planned || op.Candidate != "" {
		return outcome{}, false
	}
	old := d.v.node(op.Lost)
	// The same process, still a primary of the very history it was recorded with: had it
	// been demoted and promoted again in between it would have a new replication ID, and
	// that is a promotion to record, not a recovery.
	if !alive(old, op.LostRunID) || old.Valkey.Role != RolePrimary || old.Valkey.ReplID != op.LostHistory.ID {
		return outcome{}, false
	}
	if d.servesInsteadOf(op.Shard, d.p.Shards[op.Shard], old) != nil {
		return outcome{}, false // it was failed over for serving no slot, which it still does not
	}
	next := d.p
	next.Op = Operation{}
	return outcome{next: next, message: fmt.Sprintf("shard %d: %s answers again as the same process; nothing was promoted", op.Shard, op.Lost)}, true
}

func guardSwitchoverStale(d *decider) (outcome, bool) {
	op := d.p.Op
	if !op.Planned {
		return outcome{}, false
	}
	if d.handOverUnresolved(d.p) {
		return outcome{}, false
	}
	sw := d.v.spec.Switchover
	why := ""
	what := "switchover"
	switch {
	case op.TargetPods > 0 || op.Leaving:
		// A scale-down hand-over: its goal (the replica count) moving is spec-changed's. A
		// hand-over before a pod's deletion has no goal in the spec.
		what = "hand-over for the scale-down"
		if op.Leaving {
			what = fmt.Sprintf("hand-over before %s's pod stops", op.Lost)
		}
		if _, ok := d.switchoverTarget(d.p, op.Shard, op.Target); !ok {
			why = fmt.Sprintf("%s is no longer a caught-up replica", op.Target)
		}
	case sw == nil:
		why = "switchover request withdrawn"
	case sw.Shard != op.Shard || sw.To != op.Target:
		why = fmt.Sprintf("switchover request changed to shard %d node %s", sw.Shard, sw.To)
	default:
		if _, ok := d.switchoverTarget(d.p, op.Shard, op.Target); !ok {
			why = fmt.Sprintf("%s is no longer a caught-up replica", op.Target)
		}
	}
	if why == "" {
		return outcome{}, false
	}
	next := d.p
	next.Op = Operation{}
	return outcome{next: next, message: fmt.Sprintf("shard %d: %s to %s abandoned: %s", op.Shard, what, op.Target, why)}, true
}

// handOverUnresolved reports whether a recorded hand-over may have happened: the shard's
// recorded primary is not answering as the same process, primary of the recorded history, or
// the target already is a primary that continues that history.
// Until that is settled (failover-complete or primary-handed-over when it happened,
// primary-lost when the primary is lost) the operation may not be abandoned, or the record
// of where the shard's newest writes may be would be lost with it.
func (d *decider) handOverUnresolved(p Persisted) bool {
	if p.Op.HandOver == "" || p.Op.Shard >= len(p.Shards) {
		return false
	}
	rec := p.Shards[p.Op.Shard]
	prim := d.v.node(rec.Primary)
	if !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary || prim.Valkey.ReplID != rec.History.ID {
		return true
	}
	return d.handOverHalfWay(p, p.Op.Shard, d.v.node(p.Op.HandOver))
}

// handOverInFlight reports whether p's recorded hand-over is seen in the middle of FAILOVER
// TO from the other side: the recorded primary, the same process, already follows the
// hand-over target, which this observation still shows as its replica (the two were surveyed
// a moment apart; found on the real cluster, where the primary then counted as lost and a
// hand-over became a failover: 353 ms of write gap instead of 150). Neither takes writes (both
// say replica); the next observation shows the target promoted, and the hand-over is recorded.
func (d *decider) handOverInFlight(p Persisted) bool {
	op := p.Op
	if op.HandOver == "" || op.Shard >= len(p.Shards) {
		return false
	}
	rec := p.Shards[op.Shard]
	old, t := d.v.node(rec.Primary), d.v.node(op.HandOver)
	if !alive(old, rec.RunID) || old.Valkey.Role != RoleReplica || t == nil || !usable(t) || t.Pod.IP == "" || old.Valkey.PrimaryHost != t.Pod.IP {
		return false
	}
	return t.Valkey.Role == RoleReplica && old.Pod.IP != "" && t.Valkey.PrimaryHost == old.Pod.IP
}

// handOverHalfWay reports whether n is the target of shard s's recorded hand-over seen
// half-way through FAILOVER TO: it promoted itself on the recorded history (which it now
// names as its previous one) while the old primary, finishing the FAILOVER, still says
// primary. The hand-over may be done: the old primary follows n a moment later. Until then n
// is neither a stray primary to fence nor a reason to give the hand-over up.
func (d *decider) handOverHalfWay(p Persisted, s int, n *Node) bool {
	if n == nil || p.Op.HandOver != n.Name || p.Op.Shard != s || s >= len(p.Shards) {
		return false
	}
	h := p.Shards[s].History.ID
	return n.Reachable && n.Valkey.Role == RolePrimary && h != "" && n.Valkey.ReplID2 == h
}

func guardCandidatePromoted(d *decider) (outcome, bool) {
	p := d.p
	op := p.Op
	if op.Planned || op.Candidate == "" {
		return outcome{}, false
	}
	rec := p.Shards[op.Shard]
	c := d.v.node(rec.Primary)
	if !alive(c, rec.RunID) || !servesReplicas(c) || c.Valkey.ReplID == rec.History.ID || renamedBy(c, rec.History) {
		return outcome{}, false
	}
	next := p
	next.Shards = append([]ShardRecord(nil), p.Shards...)
	next.Shards[op.Shard].History = historyOf(c).continuing(rec.History)
	next.Op.Unpromoted = false
	return outcome{next: next, message: fmt.Sprintf("shard %d: %s promoted, history %s continues %s at offset %d", op.Shard, c.Name, short(c.Valkey.ReplID), short(c.Valkey.ReplID2), c.Valkey.SecondOffset-1)}, true
}

func guardCandidateElected(d *decider) (outcome, bool) {
	p := d.p
	op := p.Op
	if op.Planned {
		return outcome{}, false
	}
	var cur *Node
	if op.Candidate != "" {
		// Elected but not promoted yet: a node that was not visible at the election may turn
		// out to hold more; change the election while nothing was done to the first one. If
		// the elected node itself restarted or went away, primary-lost starts over from it.
		cur = d.v.node(op.Candidate)
		if rec := p.Shards[op.Shard]; !alive(cur, rec.RunID) || servesReplicas(cur) {
			return outcome{}, false
		}
	}
	if ok, _ := d.quorum(op); !ok {
		return outcome{}, false
	}
	if len(d.toDetach(op)) > 0 {
		return outcome{}, false
	}
	c, reseed, ok := d.failoverCandidate(op)
	// The lost primary itself may be elected (it came back, as a replica, or restarted from
	// its data); had it come back as the primary it was, primary-recovered fired first.
	if !ok || c.Name == op.Candidate {
		return outcome{}, false
	}
	if l, _ := d.candidates(op); cur != nil && (!l.covers(c.Valkey, cur.Valkey) || c.Valkey.Offset <= cur.Valkey.Offset) {
		return outcome{}, false
	}
	next := p
	next.Shards = recordPrimary(p.Shards, op.Shard, c)
	next.Shards[op.Shard].History = d.electedHistory(op, c)
	if op.Writer != "" && op.Writer != c.Name {
		// The writer may accept writes until it is fenced, and may hold writes its replicas
		// never got: from now on they are off the line (deposed.go). The line starts from
		// the elected node's data: its history up to its offset, its key count.
		m := DeposedPod{Pod: op.Writer, Keys: c.Valkey.Keys}
		if !c.Valkey.empty() {
			m.Left = HistoryLink{ID: c.Valkey.ReplID, End: c.Valkey.Offset + 1}
		}
		next.Shards[op.Shard].Deposed = withDeposed(next.Shards[op.Shard].Deposed, m)
	}
	var idle []string
	next.Shards[op.Shard].Deposed, idle = d.deposeIdleClaims(op.Shard, c, next.Shards[op.Shard].History, next.Shards[op.Shard].Deposed)
	if op.Candidate != "" {
		// A re-election replaces the record, it does not add a primary change.
		next.Shards[op.Shard].Epoch--
	}
	next.Op.Candidate = c.Name
	next.Op.Unpromoted = c.Valkey.Role == RoleReplica
	next.Op.ElectedAt = d.obs.Time
	next.Op.ElectedClock = d.obs.Clock
	next.Op.FenceFrom = d.fenceFrom(op)
	next.Op.Reseed = reseed
	if _, gone := d.oldPrimaryGone(op); gone {
		next.Op.KnownFenced = true
	}
	msg := fmt.Sprintf("shard %d: %s elected (offset %d) to replace %s", op.Shard, c.Name, c.Valkey.Offset, op.Lost)
	if op.Candidate != "" {
		msg = fmt.Sprintf("shard %d: %s elected (offset %d) instead of %s to replace %s", op.Shard, c.Name, c.Valkey.Offset, op.Candidate, op.Lost)
	}
	if l, cands := d.candidates(op); !reseed {
		if caveat := electionCaveat(l, cands, c); caveat != "" {
			msg += "; " + caveat
		}
	}
	if reseed {
		msg = fmt.Sprintf("shard %d: DATA LOST: no node holds the data of %s; %s starts a new history", op.Shard, op.Lost, c.Name)
	}
	if len(idle) > 0 {
		msg += fmt.Sprintf("; %s deposed (claims without pods: what those volumes hold beyond %s's data is off the line)", strings.Join(idle, ", "), c.Name)
	}
	if g := d.givenUp(op); len(g) > 0 {
		msg += fmt.Sprintf("; WITHOUT %s, unseen, by the user's decision (annotation valkey.fsm.dev/failover-without): writes only they hold are given up", names(g))
	}
	return outcome{next: next, message: msg}, true
}

// electedHistory is the history recorded for the elected node. It is the node's own, plus
// the history it continues when the node no longer reports it (a restart forgets
// master_replid2): the next failover must still recognise the nodes of the lost history as
// the shard's. The link comes from the lineage (another node reports it) or, for a node
// trusted by offset, is the lost history itself up to the node's offset: everything it
// holds is the shard's one line of writes.
func (d *decider) electedHistory(op Operation, c *Node) History {
	h := historyOf(c)
	if h.PrevID != "" || h.ID == op.LostHistory.ID {
		return h.continuing(op.LostHistory)
	}
	l, cands := d.candidates(op)
	var me *candidate
	for i := range cands {
		if cands[i].Node == c {
			me = &cands[i]
		}
	}
	switch {
	case me != nil && me.complete:
		// The writer restarted from its append-only file holds all of the lost history,
		// however far a node of it got.
		h.PrevID, h.PrevEnd, h.PrevRestarted = op.LostHistory.ID, WholeHistory, true
	case me != nil && me.unmeasured:
		// Elected by key count over the nodes of the lost history: the election says its
		// data holds theirs, up to the furthest of them. Without that link a node of the
		// lost history falls out of the shard's line, and a later election could pass it
		// over for one holding less. Its own offset (0 after the restart)
		// and the link the lineage seeded from it say nothing.
		h.PrevID, h.PrevEnd, h.PrevRestarted = op.LostHistory.ID, max(lostHistoryReach(op, cands), c.Valkey.Offset+1), true
	default:
		if parent, ok := l.Parent(h.ID); ok {
			h.PrevID, h.PrevEnd, h.PrevRestarted = parent.ID, parent.End, parent.Restarted
		} else if me != nil && me.byOffset {
			h.PrevID, h.PrevEnd = op.LostHistory.ID, c.Valkey.Offset+1
		}
	}
	return h.continuing(op.LostHistory)
}

// lostHistoryReach is one past the furthest offset a candidate in the lost history reports,
// in the lost history's offsets (0 when none does): a candidate still in a history the lost
// one continued by promotion counts too, offsets run on across a promotion: counting only the
// lost history's own nodes, a replica left in the history before the lost primary's promotion
// and passed over by key count would fall out of the line.
// Across a link whose offsets started again (a key-count link) they do not compare: the walk
// stops there.
func lostHistoryReach(op Operation, cands []candidate) int64 {
	// Each history's bound: how far into it the lost history's line goes (a node of it
	// beyond that holds writes off the line, which must not stretch the reach).
	bounds := map[string]int64{op.LostHistory.ID: WholeHistory}
	bound := WholeHistory
	for _, link := range op.LostHistory.links() {
		if link.Restarted {
			break
		}
		bound = min(bound, link.End)
		bounds[link.ID] = bound
	}
	var end int64
	for _, o := range cands {
		if b, ok := bounds[o.Valkey.ReplID]; ok {
			end = max(end, min(o.Valkey.Offset+1, b))
		}
	}
	return end
}

// toDetach lists the visible nodes of the shard that still follow something while the
// failover has not promoted anyone: their offsets may still move.
func (d *decider) toDetach(op Operation) []*Node {
	var out []*Node
	for _, n := range d.v.shard(op.Shard) {
		if usable(n) && n.Valkey.Role == RoleReplica && n.Valkey.PrimaryHost != "" {
			out = append(out, n)
		}
	}
	return out
}

func (d *decider) failoverActions(p Persisted, b *actionList) {
	op := p.Op
	s := op.Shard
	if op.Planned {
		old := d.v.node(op.Lost)
		t, ok := d.switchoverTarget(p, s, op.Target)
		if !ok {
			b.wait(fmt.Sprintf("%s is not a caught-up replica of %s", op.Target, op.Lost))
			return
		}
		b.add(HandOver{Shard: s, From: old.Name, FromRunID: old.Valkey.RunID, To: t.Name, ToRunID: t.Valkey.RunID, ToIP: t.Pod.IP})
		return
	}
	if c := d.v.node(op.Candidate); c == nil || !servesReplicas(c) {
		// Until the elected node is promoted no master of the shard may accept writes: the
		// lost primary as the same process would have been recovered, so any master open for
		// writes is a node opened by a stale action or a hand-over target nobody recorded.
		for _, n := range d.v.shard(s) {
			if usable(n) && n.Valkey.Role == RolePrimary && !n.Valkey.WritesFenced {
				b.add(Fence{Shard: s, Node: n.Name, RunID: n.Valkey.RunID})
			}
		}
	}
	if op.Candidate != "" {
		rec := p.Shards[s]
		c := d.v.node(rec.Primary)
		if !alive(c, rec.RunID) {
			_, why, _ := d.failoverOf(p, s, &op)
			b.wait(fmt.Sprintf("elected %s not answering: %s", rec.Primary, why))
			return
		}
		if !servesReplicas(c) {
			// Step 3: promote the elected node; the others follow once it serves.
			b.add(Promote{Shard: s, Node: c.Name, RunID: c.Valkey.RunID})
			return
		}
		// Steps 3 and 4: converge the shard to it, writes stay fenced until Steady.
		d.converge(p, s, false, b)
		if d.settleGhostClaims(p, s, c, b) {
			return
		}
		if why, newest := d.claimNewest(p, s, c); !newest {
			// A new epoch, if its node has heard of a newer one than its own (claims.go).
			b.add(Promote{Shard: s, Node: c.Name, RunID: c.Valkey.RunID})
			b.wait(why)
			return
		}
		if _, ok := d.oldPrimaryFenced(op); !ok {
			b.wait(fmt.Sprintf("old primary %s may accept writes until %s", op.Writer, op.fenceStart().Add(d.v.spec.FenceTimeout).Format("15:04:05.000")))
		}
		return
	}
	if ok, why := d.quorum(op); !ok {
		b.wait(why)
		return
	}
	// Step 1: freeze.
	if detach := d.toDetach(op); len(detach) > 0 {
		for _, n := range detach {
			b.add(Detach{Shard: s, Node: n.Name, RunID: n.Valkey.RunID})
		}
		return
	}
	// Step 2 is a transition (candidate-elected); if it did not fire, say why.
	if _, _, ok := d.failoverCandidate(op); !ok {
		_, why := elect(d.candidates(op))
		b.wait(fmt.Sprintf("shard %d: no node can be promoted: %s", s, why))
	}
}

// guardFenceClockRestarted: the election was timed on another operator incarnation's clock,
// which this one cannot compare with its own (it may be ahead, and would end the fence wait
// early, or behind). Unless the old primary is known to be unable to write, the wait starts
// again on this clock: an isolated old primary stops accepting writes within FenceTimeout of
// the election, so FenceTimeout from any later moment is safe; it costs at most one more wait.
func guardFenceClockRestarted(d *decider) (outcome, bool) {
	op := d.p.Op
	if op.Planned || op.Candidate == "" || op.ElectedAt.IsZero() || op.ElectedClock == d.obs.Clock || op.KnownFenced || d.v.spec.FenceTimeout <= 0 {
		return outcome{}, false
	}
	if _, gone := d.oldPrimaryGone(op); gone {
		return outcome{}, false
	}
	next := d.p
	next.Op.ElectedAt = d.obs.Time
	next.Op.ElectedClock = d.obs.Clock
	next.Op.FenceFrom = time.Time{}
	return outcome{next: next, message: fmt.Sprintf("shard %d: the fence wait for %s restarts on this operator's clock: the election was timed by another operator incarnation, whose clock cannot be compared", op.Shard, op.Writer)}, true
}
