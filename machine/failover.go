package machine

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// FailingOver replaces the primary of one shard (Op.Election.Shard). Unplanned, in steps that each
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
	s := op.Election.Shard
	if s >= len(p.Shards) {
		return outcome{}, false
	}
	next := p
	next.Op = Operation{}
	if op.Election.Planned {
		t, ok := d.handedOver(p, s)
		if !ok {
			return outcome{}, false
		}
		next.Shards = recordPrimary(p.Shards, s, t)
		why := Reason{Kind: ReasonSwitchedOver, Shard: s, Goal: goalOf(op), Node: op.Election.Lost, Peer: t.Name, Pods: op.Switchover.Pods}
		return outcome{next: next, why: why}, true
	}
	if op.Election.Candidate == "" {
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
	why := Reason{Kind: ReasonFailedOver, Shard: s, Node: c.Name, Peer: op.Election.Writer, Fenced: fencedBy}
	if c.Name == op.Election.Writer {
		// Elected again (back from its volume with the most data; in cluster mode also when
		// it served the slots the elected node could not: servesInsteadOf): the writer itself
		// holds every write it took.
		why = Reason{Kind: ReasonServesAgain, Shard: s, Node: c.Name, Slots: d.v.spec.Mode == ModeCluster}
	}
	var msg string
	if op.Election.Reseed {
		msg += "; DATA LOST, new history"
	}
	if op.Election.Preempted != "" {
		msg += fmt.Sprintf("; %s resumes from Steady", op.Election.Preempted)
	}
	return outcome{next: next, why: why, message: msg}, true
}

// oldPrimaryFenced reports whether the writer (the last primary that may have accepted
// writes) can no longer accept writes, and how that is known.
func (d *decider) oldPrimaryFenced(op Operation) (Fenced, bool) {
	if op.Election.KnownFenced {
		return Fenced{How: FencedKnownDead}, true
	}
	if how, ok := d.oldPrimaryGone(op); ok {
		return how, true
	}
	// FenceTimeout 0 means none is configured: only evidence counts then.
	if d.v.spec.FenceTimeout > 0 && !op.Election.ElectedAt.IsZero() && op.Election.ElectedClock == d.obs.Clock && !d.obs.Time.Before(op.fenceStart().Add(d.v.spec.FenceTimeout)) {
		how := Fenced{How: FencedByTimeout, Timeout: d.v.spec.FenceTimeout}
		if op.fenceStart().Before(op.Election.ElectedAt) {
			how.SealedAt = op.fenceStart()
		}
		return how, true
	}
	return Fenced{}, false
}

// fenceStart is the moment an isolated writer's FenceTimeout runs from: the seal of the last
// replica when FenceFrom says every visible one was sealed unlinked, otherwise the election.
func (op Operation) fenceStart() time.Time {
	if !op.Election.FenceFrom.IsZero() && op.Election.FenceFrom.Before(op.Election.ElectedAt) {
		return op.Election.FenceFrom
	}
	return op.Election.ElectedAt
}

// fenceFrom is the last moment a node of the shard visible now may have given the writer an
// acknowledgement, when that is before now: each was sealed, on this operator's clock, while it
// had no connection to any primary, so it gave none after its seal (Seal). Any other node may
// have until it was detached, which is before this election but not known when: the result is
// then zero (the fence runs from the election). Nodes not visible are the quorum's business:
// fewer of them than min-replicas-to-write can keep an isolated writer writable on their own.
func (d *decider) fenceFrom(op Operation) time.Time {
	var from time.Time
	for _, n := range d.v.shard(op.Election.Shard) {
		if n.Name == op.Election.Writer || !n.Reachable {
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
		b.add(Seal{Target: TargetOf(s, n)})
	}
}

// oldPrimaryGone reports evidence, in this observation, that the writer process cannot
// accept writes.
func (d *decider) oldPrimaryGone(op Operation) (Fenced, bool) {
	old := d.v.node(op.Election.Writer)
	switch {
	case old == nil || !old.Pod.Exists || !old.Pod.Running:
		return Fenced{How: FencedPodGone}, true
	case old.Reachable && old.Valkey.RunID != op.Election.WriterRunID:
		return Fenced{How: FencedRestarted}, true
	case old.Reachable && fenced(old):
		return Fenced{How: FencedObserved}, true
	}
	return Fenced{}, false
}

func guardPrimaryRecovered(d *decider) (outcome, bool) {
	op := d.p.Op
	if op.Election.Planned || op.Election.Candidate != "" {
		return outcome{}, false
	}
	old := d.v.node(op.Election.Lost)
	// The same process, still a primary of the very history it was recorded with: had it
	// been demoted and promoted again in between it would have a new replication ID, and
	// that is a promotion to record, not a recovery.
	if !alive(old, op.Election.LostRunID) || old.Valkey.Role != RolePrimary || old.Valkey.ReplID != op.Election.LostHistory.ID {
		return outcome{}, false
	}
	if d.servesInsteadOf(op.Election.Shard, d.p.Shards[op.Election.Shard], old) != nil {
		return outcome{}, false // it was failed over for serving no slot, which it still does not
	}
	next := d.p
	next.Op = Operation{}
	return outcome{next: next, message: fmt.Sprintf("shard %d: %s answers again as the same process; nothing was promoted", op.Election.Shard, op.Election.Lost)}, true
}

func guardSwitchoverStale(d *decider) (outcome, bool) {
	op := d.p.Op
	if !op.Election.Planned {
		return outcome{}, false
	}
	if d.handOverUnresolved(d.p) {
		return outcome{}, false
	}
	sw := d.v.spec.Switchover
	why := Reason{Shard: op.Election.Shard, Goal: goalOf(op), Node: op.Election.Lost, Peer: op.Switchover.To}
	switch {
	case why.Goal != GoalSwitchover:
		// A scale-down hand-over: its goal (the replica count) moving is spec-changed's. A
		// hand-over before a pod's deletion has no goal in the spec.
		if _, ok := d.switchoverTarget(d.p, op.Election.Shard, op.Switchover.To); !ok {
			why.Kind = ReasonHandOverTargetGone
		}
	case sw == nil:
		why.Kind = ReasonSwitchoverWithdrawn
	case sw.Shard != op.Election.Shard || sw.To != op.Switchover.To:
		why.Kind, why.ToShard, why.ToNode = ReasonSwitchoverChanged, sw.Shard, sw.To
	default:
		if _, ok := d.switchoverTarget(d.p, op.Election.Shard, op.Switchover.To); !ok {
			why.Kind = ReasonHandOverTargetGone
		}
	}
	if why.Kind == ReasonNone {
		return outcome{}, false
	}
	next := d.p
	next.Op = Operation{}
	return outcome{next: next, why: why}, true
}

// handOverUnresolved reports whether a recorded hand-over may have happened: the shard's
// recorded primary is not answering as the same process, primary of the recorded history, or
// the target already is a primary that continues that history.
// Until that is settled (failover-complete or primary-handed-over when it happened,
// primary-lost when the primary is lost) the operation may not be abandoned, or the record
// of where the shard's newest writes may be would be lost with it.
//
// In the Sentinel topology a hand-over is also unresolved while a sentinel fails the group
// over: the failover may be the hand-over's, and the sentinels decide; sentinel-promoted
// records their pick.
func (d *decider) handOverUnresolved(p Persisted) bool {
	if p.Op.HandOver.To == "" || p.Op.HandOver.Shard >= len(p.Shards) {
		return false
	}
	if d.v.spec.Mode == ModeSentinel && len(d.sentinelsFailingOver()) > 0 {
		return true
	}
	rec := p.Shards[p.Op.HandOver.Shard]
	prim := d.v.node(rec.Primary)
	if !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary || prim.Valkey.ReplID != rec.History.ID {
		return true
	}
	return d.handOverHalfWay(p, p.Op.HandOver.Shard, d.v.node(p.Op.HandOver.To))
}

// handOverInFlight reports whether p's recorded hand-over is seen in the middle of FAILOVER
// TO from the other side: the recorded primary, the same process, already follows the
// hand-over target, which this observation still shows as its replica (the two were surveyed
// a moment apart; found on the real cluster, where the primary then counted as lost and a
// hand-over became a failover: 353 ms of write gap instead of 150). Neither takes writes (both
// say replica); the next observation shows the target promoted, and the hand-over is recorded.
func (d *decider) handOverInFlight(p Persisted) bool {
	op := p.Op
	if op.HandOver.To == "" || op.HandOver.Shard >= len(p.Shards) {
		return false
	}
	rec := p.Shards[op.HandOver.Shard]
	old, t := d.v.node(rec.Primary), d.v.node(op.HandOver.To)
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
	if n == nil || p.Op.HandOver.To != n.Name || p.Op.HandOver.Shard != s || s >= len(p.Shards) {
		return false
	}
	h := p.Shards[s].History.ID
	return n.Reachable && n.Valkey.Role == RolePrimary && h != "" && n.Valkey.ReplID2 == h
}

func guardCandidatePromoted(d *decider) (outcome, bool) {
	p := d.p
	op := p.Op
	if op.Election.Planned || op.Election.Candidate == "" {
		return outcome{}, false
	}
	rec := p.Shards[op.Election.Shard]
	c := d.v.node(rec.Primary)
	if !alive(c, rec.RunID) || !servesReplicas(c) || c.Valkey.ReplID == rec.History.ID || renamedBy(c, rec.History) {
		return outcome{}, false
	}
	next := p
	next.Shards = append([]ShardRecord(nil), p.Shards...)
	next.Shards[op.Election.Shard].History = historyOf(c).continuing(rec.History)
	next.Op.Election.Unpromoted = false
	return outcome{next: next, message: fmt.Sprintf("shard %d: %s promoted, history %s continues %s at offset %d", op.Election.Shard, c.Name, short(c.Valkey.ReplID), short(c.Valkey.ReplID2), c.Valkey.SecondOffset-1)}, true
}

func guardCandidateElected(d *decider) (outcome, bool) {
	p := d.p
	op := p.Op
	if op.Election.Planned {
		return outcome{}, false
	}
	var cur *Node
	if op.Election.Candidate != "" {
		// Elected but not promoted yet: a node that was not visible at the election may turn
		// out to hold more; change the election while nothing was done to the first one. If
		// the elected node itself restarted or went away, primary-lost starts over from it.
		cur = d.v.node(op.Election.Candidate)
		if rec := p.Shards[op.Election.Shard]; !alive(cur, rec.RunID) || servesReplicas(cur) {
			return outcome{}, false
		}
	}
	if ok, _ := d.quorum(op); !ok {
		return outcome{}, false
	}
	if len(d.toDetach(op)) > 0 || len(d.openOutsideTheElection(op)) > 0 {
		return outcome{}, false
	}
	c, reseed, ok := d.failoverCandidate(op)
	// The lost primary itself may be elected (it came back, as a replica, or restarted from
	// its data); had it come back as the primary it was, primary-recovered fired first.
	if !ok || c.Name == op.Election.Candidate {
		return outcome{}, false
	}
	if l, _ := d.candidates(op); cur != nil && (!l.covers(c.Valkey, cur.Valkey) || c.Valkey.Offset <= cur.Valkey.Offset) {
		return outcome{}, false
	}
	next := p
	next.Shards = recordPrimary(p.Shards, op.Election.Shard, c)
	next.Shards[op.Election.Shard].History = d.electedHistory(op, c)
	if op.Election.Writer != "" && op.Election.Writer != c.Name {
		// The writer may accept writes until it is fenced, and may hold writes its replicas
		// never got: from now on they are off the line (deposed.go).
		next.Shards[op.Election.Shard].Deposed = withDeposed(next.Shards[op.Election.Shard].Deposed, deposedAt(op.Election.Writer, c))
	}
	if l := op.Election.Lost; d.v.spec.Mode == ModeCluster && l != "" && l != op.Election.Writer && l != c.Name {
		// The lost node was elected by this failover and lost before it completed: its writes
		// were never opened, so it holds the line up to its election, which c's data
		// contains, but its takeover may have left it serving the shard's slots, which only a
		// newer claim takes back. Deposed, its slots go to c and it resyncs, as a deposed
		// writer's would.
		next.Shards[op.Election.Shard].Deposed = withDeposed(next.Shards[op.Election.Shard].Deposed, deposedAt(l, c))
	}
	var idle []string
	next.Shards[op.Election.Shard].Deposed, idle = d.deposeIdleClaims(op.Election.Shard, c, next.Shards[op.Election.Shard].History, next.Shards[op.Election.Shard].Deposed)
	if op.Election.Candidate != "" {
		// A re-election replaces the record, it does not add a primary change.
		next.Shards[op.Election.Shard].Epoch--
	}
	next.Op.Election.Candidate = c.Name
	next.Op.Election.Unpromoted = c.Valkey.Role == RoleReplica
	next.Op.Election.ElectedAt = d.obs.Time
	next.Op.Election.ElectedClock = d.obs.Clock
	next.Op.Election.FenceFrom = d.fenceFrom(op)
	next.Op.Election.Reseed = reseed
	if _, gone := d.oldPrimaryGone(op); gone {
		next.Op.Election.KnownFenced = true
	}
	why := Reason{Kind: ReasonElected, Shard: op.Election.Shard, Node: c.Name, Peer: op.Election.Lost, Offset: c.Valkey.Offset, Instead: op.Election.Candidate}
	if reseed {
		why = Reason{Kind: ReasonReseeded, Shard: op.Election.Shard, Node: c.Name, Peer: op.Election.Lost}
	} else {
		l, cands := d.candidates(op)
		why.OverByKeys, why.Keys = electedByKeys(l, cands, c)
		why.KeysGivenUp = d.deposedGivenUp(cands, c)
	}
	why.Deposed = strings.Join(idle, ", ")
	if g := d.givenUp(op); len(g) > 0 {
		why.GivenUp = names(g)
	}
	return outcome{next: next, why: why}, true
}

// electedHistory is the history recorded for the elected node. It is the node's own, plus
// the history it continues when the node no longer reports it (a restart forgets
// master_replid2): the next failover must still recognise the nodes of the lost history as
// the shard's. The link comes from the lineage (another node reports it) or, for a node
// trusted by offset, is the lost history itself up to the node's offset: everything it
// holds is the shard's one line of writes.
func (d *decider) electedHistory(op Operation, c *Node) History {
	h := historyOf(c)
	if h.PrevID != "" || h.ID == op.Election.LostHistory.ID {
		return h.continuing(op.Election.LostHistory)
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
		h.PrevID, h.PrevEnd, h.PrevRestarted = op.Election.LostHistory.ID, WholeHistory, true
	case me != nil && me.unmeasured:
		// Elected by key count over the nodes of the lost history: the election says its
		// data holds theirs, up to the furthest of them. Without that link a node of the
		// lost history falls out of the shard's line, and a later election could pass it
		// over for one holding less. Its own offset (0 after the restart)
		// and the link the lineage seeded from it say nothing.
		h.PrevID, h.PrevEnd, h.PrevRestarted = op.Election.LostHistory.ID, max(lostHistoryReach(op, cands), c.Valkey.Offset+1), true
		if b, ok := branchOffTheLostHistory(op, cands, c); ok {
			// The data it was counted against includes a history that branched off the
			// lost one (a hand-over nobody recorded): the link goes through that branch,
			// or its node, holding the line's writes, would be a fork at the next election.
			h.PrevID, h.PrevEnd = b.Valkey.ReplID, b.Valkey.Offset+1
			return h.continuing(historyOf(b.Node).continuing(op.Election.LostHistory))
		}
	default:
		if parent, ok := l.Parent(h.ID); ok {
			h.PrevID, h.PrevEnd, h.PrevRestarted = parent.ID, parent.End, parent.Restarted
		} else if me != nil && me.byOffset {
			h.PrevID, h.PrevEnd = op.Election.LostHistory.ID, c.Valkey.Offset+1
		}
	}
	return h.continuing(op.Election.LostHistory)
}

// branchOffTheLostHistory is the one candidate other than c whose history branched off the
// lost history within its line (master_replid2 is a history of the line, the branch point
// within its bound) under an ID the line does not know: the history of a hand-over nobody
// recorded. Two such histories cannot both be linked: then none is.
func branchOffTheLostHistory(op Operation, cands []candidate, c *Node) (candidate, bool) {
	bounds := lineBounds(op)
	var out candidate
	found := false
	for _, o := range cands {
		v := o.Valkey
		if o.Node == c || o.mark != nil || v.ReplID2 == "" {
			continue
		}
		if _, known := bounds[v.ReplID]; known {
			continue
		}
		if b, ok := bounds[v.ReplID2]; !ok || v.SecondOffset > b {
			continue
		}
		if found && out.Valkey.ReplID != v.ReplID {
			return candidate{}, false
		}
		if !found || v.Offset > out.Valkey.Offset {
			out, found = o, true
		}
	}
	return out, found
}

// lineBounds maps each history of op's lost history, up to its first key-count link, to how
// far into it the line goes (a node of it beyond that holds writes off the line).
func lineBounds(op Operation) map[string]int64 {
	bounds := map[string]int64{op.Election.LostHistory.ID: WholeHistory}
	bound := WholeHistory
	for _, link := range op.Election.LostHistory.links() {
		if link.Restarted {
			break
		}
		bound = min(bound, link.End)
		bounds[link.ID] = bound
	}
	return bounds
}

// lostHistoryReach is one past the furthest offset a candidate in the lost history reports,
// in the lost history's offsets (0 when none does): a candidate still in a history the lost
// one continued by promotion counts too, offsets run on across a promotion: counting only the
// lost history's own nodes, a replica left in the history before the lost primary's promotion
// and passed over by key count would fall out of the line.
// Across a link whose offsets started again (a key-count link) they do not compare: the walk
// stops there.
func lostHistoryReach(op Operation, cands []candidate) int64 {
	bounds := lineBounds(op)
	var end int64
	for _, o := range cands {
		if b, ok := bounds[o.Valkey.ReplID]; ok {
			end = max(end, min(o.Valkey.Offset+1, b))
		}
	}
	return end
}

// openPrimaries lists the visible primaries of shard s open for client writes. During a
// failover none should be (the lost primary as the same process would have been recovered):
// such a node was opened by a stale action or is the target of a hand-over nobody recorded.
func (d *decider) openPrimaries(s int) []*Node {
	var out []*Node
	for _, n := range d.v.shard(s) {
		if usable(n) && n.Valkey.Role == RolePrimary && !n.Valkey.WritesFenced {
			out = append(out, n)
		}
	}
	return out
}

// openOutsideTheElection lists the open primaries of op's shard that are no candidate: a
// hand-over target nobody recorded whose history the lineage cannot place (the old primary
// restarted before its replicas' view of the hand-over was seen, and the ID it handed over
// from was never recorded). It may take writes, so its data may be the newest the shard has,
// and an election without it would resync it from a node holding less. The election waits
// until it is fenced: fenced and following nothing, it is a node on its own that the
// election weighs however little of its history the record knows (candidates).
func (d *decider) openOutsideTheElection(op Operation) []*Node {
	open := d.openPrimaries(op.Election.Shard)
	if len(open) == 0 {
		return nil
	}
	_, cands := d.candidates(op)
	var out []*Node
	for _, n := range open {
		if !slices.ContainsFunc(cands, func(c candidate) bool { return c.Node == n }) {
			out = append(out, n)
		}
	}
	return out
}

// toDetach lists the visible nodes of the shard that still follow something while the
// failover has not promoted anyone: their offsets may still move.
func (d *decider) toDetach(op Operation) []*Node {
	var out []*Node
	for _, n := range d.v.shard(op.Election.Shard) {
		if usable(n) && n.Valkey.Role == RoleReplica && n.Valkey.PrimaryHost != "" {
			out = append(out, n)
		}
	}
	return out
}

func (d *decider) failoverActions(p Persisted, b *actionList) {
	op := p.Op
	s := op.Election.Shard
	if op.Election.Planned {
		old := d.v.node(op.Election.Lost)
		t, ok := d.switchoverTarget(p, s, op.Switchover.To)
		if !ok {
			b.wait(Wait{Kind: WaitSwitchoverTarget, Shard: s, Node: op.Switchover.To, Peer: op.Election.Lost})
			return
		}
		b.add(HandOver{Shard: s, From: old.Name, FromRunID: old.Valkey.RunID, To: t.Name, ToRunID: t.Valkey.RunID, ToIP: t.Pod.IP})
		return
	}
	if c := d.v.node(op.Election.Candidate); c == nil || !servesReplicas(c) {
		// Until the elected node is promoted no master of the shard may accept writes: the
		// lost primary as the same process would have been recovered, so any master open for
		// writes is a node opened by a stale action or a hand-over target nobody recorded.
		for _, n := range d.openPrimaries(s) {
			b.add(Fence{Target: TargetOf(s, n)})
		}
	}
	if op.Election.Candidate != "" {
		rec := p.Shards[s]
		c := d.v.node(rec.Primary)
		if !alive(c, rec.RunID) {
			_, why, _ := d.failoverOf(p, s, &op)
			b.wait(why.wait(WaitElectedNotAnswering, rec.Primary))
			return
		}
		if !servesReplicas(c) {
			// Step 3: promote the elected node; the others follow once it serves.
			b.add(Promote{Target: TargetOf(s, c)})
			return
		}
		// Steps 3 and 4: converge the shard to it, writes stay fenced until Steady.
		d.converge(p, s, false, b)
		if d.settleGhostClaims(p, s, c, b) {
			return
		}
		if why, newest := d.claimNewest(p, s, c); !newest {
			// A new epoch, if its node has heard of a newer one than its own (claims.go).
			b.add(Promote{Target: TargetOf(s, c)})
			b.wait(Wait{Kind: WaitClaimNotNewest, Shard: s, Node: c.Name, Detail: why})
			return
		}
		if _, ok := d.oldPrimaryFenced(op); !ok {
			b.wait(Wait{Kind: WaitOldPrimaryMayWrite, Shard: s, Node: op.Election.Writer, Until: op.fenceStart().Add(d.v.spec.FenceTimeout)})
		}
		return
	}
	if ok, why := d.quorum(op); !ok {
		b.wait(Wait{Kind: WaitFailoverQuorum, Shard: s, Detail: why})
		return
	}
	// Step 1: freeze.
	if detach := d.toDetach(op); len(detach) > 0 {
		for _, n := range detach {
			b.add(Detach{Target: TargetOf(s, n)})
		}
		return
	}
	if open := d.openOutsideTheElection(op); len(open) > 0 {
		b.wait(Wait{Kind: WaitOpenPrimaryUnplaced, Shard: s, Detail: names(open)})
		return
	}
	// Step 2 is a transition (candidate-elected); if it did not fire, say why.
	if _, _, ok := d.failoverCandidate(op); !ok {
		b.wait(d.noElection(op))
	}
}

// guardFenceClockRestarted: the election was timed on another operator incarnation's clock,
// which this one cannot compare with its own (it may be ahead, and would end the fence wait
// early, or behind). Unless the old primary is known to be unable to write, the wait starts
// again on this clock: an isolated old primary stops accepting writes within FenceTimeout of
// the election, so FenceTimeout from any later moment is safe; it costs at most one more wait.
func guardFenceClockRestarted(d *decider) (outcome, bool) {
	op := d.p.Op
	if op.Election.Planned || op.Election.Candidate == "" || op.Election.ElectedAt.IsZero() || op.Election.ElectedClock == d.obs.Clock || op.Election.KnownFenced || d.v.spec.FenceTimeout <= 0 {
		return outcome{}, false
	}
	if _, gone := d.oldPrimaryGone(op); gone {
		return outcome{}, false
	}
	next := d.p
	next.Op.Election.ElectedAt = d.obs.Time
	next.Op.Election.ElectedClock = d.obs.Clock
	next.Op.Election.FenceFrom = time.Time{}
	return outcome{next: next, message: fmt.Sprintf("shard %d: the fence wait for %s restarts on this operator's clock: the election was timed by another operator incarnation, whose clock cannot be compared", op.Election.Shard, op.Election.Writer)}, true
}
