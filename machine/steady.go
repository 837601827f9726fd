package machine

import "fmt"

// Steady: every shard has a recorded primary. The machine converges the world to the record
// (replicas follow the primary, stray masters are fenced and demoted, the primary is open for
// writes) and starts at most one planned operation, only from a converged cluster.

// guardPrimaryLost: see lostShard for when a primary counts as lost and may be replaced. From
// FailingOver it only applies to the shard being failed over, once its new primary is
// recorded (or during a switchover, to the primary being switched): the promoted node is
// lost in turn. A lost primary of another shard waits: one operation at a time.
func guardPrimaryLost(d *decider) (outcome, bool) {
	p := d.p
	only := -1
	preempted := Steady
	var writer *Operation
	switch p.State {
	case FailingOver:
		if !p.Op.Election.Planned && p.Op.Election.Candidate == "" {
			return outcome{}, false
		}
		only = p.Op.Election.Shard
		preempted = p.Op.Election.Preempted
		if !p.Op.Election.Planned {
			// The elected node never took writes: the quorum still excludes only the
			// primary before it, and the elected node counts like any replica.
			writer = &p.Op
		}
	case Rolling, Resharding:
		preempted = p.State
	}
	if d.handOverInFlight(p) {
		return outcome{}, false
	}
	op, fault, ok := d.lostShard(p, only, writer)
	if !ok {
		return outcome{}, false
	}
	if preempted != Steady {
		op.Election.Preempted = preempted
	}
	if p.Op.HandOver.To != "" && p.Op.HandOver.Shard == op.Election.Shard {
		op.HandOver = p.Op.HandOver
	}
	next := p
	next.Op = op
	// A failover the machine took over in the Sentinel topology stays its own.
	next.Op.Election.TakenOver = p.State == FailingOver && p.Op.Election.TakenOver
	why := Reason{Kind: ReasonPrimaryLost, Shard: op.Election.Shard, Fault: fault}
	if writer != nil && writer.Election.Unpromoted && writer.Election.Writer != "" {
		// The writer was deposed by the election of a node that was never promoted: nobody
		// took writes after it, so what it holds is the line's again (see failoverOf). From
		// FailingOver, an unplanned failover's primary-lost needs a candidate (above).
		next.Shards = append([]ShardRecord(nil), p.Shards...)
		next.Shards[op.Election.Shard].Deposed = withoutDeposed(p.Shards[op.Election.Shard].Deposed, writer.Election.Writer)
		why.Unpromoted, why.Writer = writer.Election.Candidate, writer.Election.Writer
	}
	why.Preempted = op.Election.Preempted
	if p.State == FailingOver {
		why.Pods = p.Op.Switchover.Pods
	}
	return outcome{next: next, why: why}, true
}

// guardPrimaryHandedOver: the recorded primary follows a node that took over its history
// with writes intact (FAILOVER TO): record the new primary. Tried before primary-lost, which
// would otherwise see a primary that is no longer one.
func guardPrimaryHandedOver(d *decider) (outcome, bool) {
	for s := range d.p.Shards {
		if t, ok := d.handedOver(d.p, s); ok {
			next := d.p
			next.Shards = recordPrimary(d.p.Shards, s, t)
			next.Op.HandOver = HandOverMark{}
			return outcome{next: next, message: fmt.Sprintf("shard %d: %s handed over to %s", s, d.p.Shards[s].Primary, t.Name)}, true
		}
	}
	return outcome{}, false
}

// handedOver finds the node the recorded primary of shard s handed over to, if it did.
func (d *decider) handedOver(p Persisted, s int) (*Node, bool) {
	rec := p.Shards[s]
	old := d.v.node(rec.Primary)
	if !alive(old, rec.RunID) || old.Valkey.Role != RoleReplica {
		return nil, false
	}
	t := d.v.byIP(s, old.Valkey.PrimaryHost)
	if t == nil || !servesReplicas(t) || t.Valkey.ReplID2 != rec.History.ID || t.Valkey.ReplID2 == "" {
		return nil, false
	}
	return t, true
}

// recordPrimary returns a copy of shards where shard s is recorded as led by n.
func recordPrimary(shards []ShardRecord, s int, n *Node) []ShardRecord {
	out := make([]ShardRecord, len(shards), max(len(shards), s+1))
	copy(out, shards)
	for len(out) <= s {
		out = append(out, ShardRecord{})
	}
	out[s] = ShardRecord{Primary: n.Name, RunID: n.Valkey.RunID, History: historyOf(n).continuing(out[s].History), Epoch: out[s].Epoch + 1, Deposed: withoutDeposed(out[s].Deposed, n.Name)}
	return out
}

func guardRestoreRequested(d *decider) (outcome, bool) {
	r := d.v.spec.Restore
	if r == nil || r.ID == "" || r.Pending != "" || r.ID == d.p.Restored || r.Shards != len(d.p.Shards) {
		return outcome{}, false
	}
	next := d.p
	next.Op = Operation{Restore: Restore{Request: r.ID, Snapshot: r.Snapshot, GiveBack: true}}
	return outcome{next: next, message: "restore " + restoreName(r.ID, r.Snapshot)}, true
}

func guardSwitchoverRequested(d *decider) (outcome, bool) {
	sw := d.v.spec.Switchover
	p := d.p
	if sw == nil || sw.Shard < 0 || sw.Shard >= len(p.Shards) || sw.To == p.Shards[sw.Shard].Primary {
		return outcome{}, false
	}
	if ok, _ := d.converged(p); !ok || d.scaling(p) {
		return outcome{}, false
	}
	t, ok := d.switchoverTarget(p, sw.Shard, sw.To)
	if !ok {
		return outcome{}, false
	}
	rec := p.Shards[sw.Shard]
	if d.sentinelHandOverBlocked(p, sw.Shard, t) != "" {
		return outcome{}, false
	}
	next := p
	next.Op = Operation{
		Election:   Election{Shard: sw.Shard, Lost: rec.Primary, LostRunID: rec.RunID, LostHistory: rec.History, Planned: true},
		Switchover: SwitchoverGoal{To: sw.To},
		HandOver:   HandOverMark{Shard: sw.Shard, To: sw.To},
	}
	return outcome{next: next, why: Reason{Kind: ReasonHandOverStarted, Shard: sw.Shard, Goal: GoalSwitchover, Node: rec.Primary, Peer: sw.To}}, true
}

// SwitchoverAnswer is what a switchover request has come to outside of the machine's own
// transitions: done (the target is the primary), refused (the target is no pod of the
// cluster), or neither (the machine takes it, or waits and says why).
type SwitchoverAnswer int

const (
	SwitchoverPending SwitchoverAnswer = iota
	SwitchoverDone
	SwitchoverRefused
)

// AnswerSwitchover says whether the request sw is done or refused, given the persisted state
// and what is observed: the operator removes such a request (with an Event), and so does the
// simulated operator, so that a request nobody will ever take does not wait forever.
func AnswerSwitchover(p Persisted, obs Observation, sw *Switchover) SwitchoverAnswer {
	if sw == nil {
		return SwitchoverPending
	}
	known := false
	for _, n := range obs.Nodes {
		known = known || n.Name == sw.To
	}
	switch {
	case !known:
		return SwitchoverRefused
	case p.State == Steady && sw.Shard < len(p.Shards) && p.Shards[sw.Shard].Primary == sw.To:
		return SwitchoverDone
	}
	return SwitchoverPending
}

// switchoverWaits says why a requested switchover is not taken now ("" when none is
// requested or it can be): the request stays and is taken once the reason is gone, and the
// user sees the reason in status and an Event instead of a request that silently does nothing.
func (d *decider) switchoverWaits(p Persisted) string {
	sw := d.v.spec.Switchover
	if sw == nil || sw.Shard < 0 || sw.Shard >= len(p.Shards) || sw.To == p.Shards[sw.Shard].Primary {
		return ""
	}
	rec := p.Shards[sw.Shard]
	prim, t := d.v.node(rec.Primary), d.v.node(sw.To)
	why := ""
	switch ok, notConverged := d.converged(p); {
	case t == nil || t.Shard != sw.Shard:
		why = fmt.Sprintf("%s is not a pod of shard %d", sw.To, sw.Shard)
	case d.removed(p, t):
		why = fmt.Sprintf("%s is on an ordinal the scale-down removes", sw.To)
	case !usable(t):
		why = fmt.Sprintf("%s is not answering", sw.To)
	case alive(prim, rec.RunID) && (!follows(t, prim) || !t.Valkey.LinkUp):
		why = fmt.Sprintf("%s is not a linked replica of %s", sw.To, rec.Primary)
	case alive(prim, rec.RunID) && t.Valkey.ReplID != prim.Valkey.ReplID:
		why = fmt.Sprintf("%s has not synced %s's history yet", sw.To, rec.Primary)
	case !ok:
		why = notConverged
	case d.scaling(p):
		why = "the scaling in progress finishes first"
	case d.v.spec.Mode == ModeSentinel:
		why = d.sentinelHandOverReady(rec, prim, t)
	}
	if why == "" {
		return ""
	}
	return fmt.Sprintf("switchover to %s waits: %s", sw.To, why)
}

// switchoverTarget reports whether node `to` may take over shard s by a hand-over now: it is
// a replica of the recorded primary, linked, in the same history, on an ordinal that stays
// (never one a scale-down removes), and its pod is not being deleted.
func (d *decider) switchoverTarget(p Persisted, s int, to string) (*Node, bool) {
	rec := p.Shards[s]
	prim := d.v.node(rec.Primary)
	t := d.v.node(to)
	if t == nil || t.Shard != s || !usable(t) || t.Pod.Terminating || !alive(prim, rec.RunID) || d.removed(p, t) {
		return nil, false
	}
	if !follows(t, prim) || !t.Valkey.LinkUp || t.Valkey.ReplID != prim.Valkey.ReplID {
		return nil, false
	}
	return t, true
}

func guardRolloutNeeded(d *decider) (outcome, bool) {
	if ok, _ := d.converged(d.p); !ok || d.scaling(d.p) {
		return outcome{}, false
	}
	stale := d.staleRevision(d.v.spec.Revision)
	if len(stale) == 0 {
		return outcome{}, false
	}
	next := d.p
	next.Op = Operation{Roll: Roll{Revision: d.v.spec.Revision}}
	return outcome{next: next, message: fmt.Sprintf("roll %d pod(s) to revision %s", len(stale), d.v.spec.Revision)}, true
}

// staleRevision lists the pods that run another revision than rev.
func (d *decider) staleRevision(rev string) []*Node {
	var out []*Node
	for _, n := range d.v.nodes {
		if n.Pod.Exists && n.Pod.Revision != rev {
			out = append(out, n)
		}
	}
	return out
}

func guardReshardNeeded(d *decider) (outcome, bool) {
	spec := d.v.spec
	if spec.Mode != ModeCluster {
		return outcome{}, false
	}
	if ok, _ := d.converged(d.p); !ok || d.scaling(d.p) {
		return outcome{}, false
	}
	open, _ := d.openMoves()
	if len(d.p.Shards) == spec.Shards && d.v.shardCount() == spec.Shards && len(d.slotMoves(d.p, spec.Shards)) == 0 && len(open) == 0 {
		return outcome{}, false
	}
	next := d.p
	next.Op = Operation{Reshard: Reshard{Shards: spec.Shards}}
	return outcome{next: next, why: Reason{Kind: ReasonReshard, Shards: len(d.p.Shards), SpecShards: spec.Shards, OpenSlots: len(open)}}, true
}

// converged reports whether every recorded shard is as the record says: the primary answers
// as the recorded process, open for writes; every pod the objects ask for (objectPods) exists,
// follows it and is linked, and no pod beyond them is left; in cluster mode every node is
// joined. Planned operations start only then.
func (d *decider) converged(p Persisted) (bool, string) {
	for s := range p.Shards {
		if ok, why := d.shardConverged(p, s, true); !ok {
			return false, why
		}
		if why := d.sentinelsUnsettled(p.Shards[s]); why != "" {
			return false, why
		}
	}
	// A ghost that still serves slots is settled first (a failover's takeover, or the stranded
	// rule of forgetGhosts): a resharding started meanwhile would see its slots as free and
	// hand them out by its plan, away from the shard that holds their keys (found by the
	// simulator: both nodes of a shard lost their volumes in turn, then a resharding began).
	for _, g := range d.ghosts() {
		if g.slots > 0 && !g.live {
			return false, fmt.Sprintf("%s, a node that is no pod of this cluster, still serves %d slot(s)", g.id, g.slots)
		}
	}
	return true, ""
}

func (d *decider) shardConverged(p Persisted, s int, open bool) (bool, string) {
	rec := p.Shards[s]
	prim := d.v.node(rec.Primary)
	if !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary || prim.Valkey.SyncFenced {
		return false, fmt.Sprintf("shard %d: primary %s not serving", s, rec.Primary)
	}
	if open && prim.Valkey.WritesFenced {
		return false, fmt.Sprintf("shard %d: primary %s not open for writes", s, rec.Primary)
	}
	pods := d.objectPods(p)
	var nodes []*Node
	for _, n := range d.v.shard(s) {
		switch {
		case n.Ordinal < pods:
			nodes = append(nodes, n)
		case n.Pod.Exists:
			return false, fmt.Sprintf("shard %d: %s is still there (%d pod(s) per shard)", s, n.Name, pods)
		}
	}
	if len(nodes) != pods {
		return false, fmt.Sprintf("shard %d: %d of %d pods", s, len(nodes), pods)
	}
	for _, n := range nodes {
		if p.State == Steady && d.offTheBus(p, n) {
			// An empty node on an ordinal the scale-down removes, off the bus (it left, or it
			// restarted empty and is not let back in): it only waits for its pod to go.
			// Requiring it joined would hold the scale-down's hand-overs, and with them the
			// removal of its pod, for ever (found by the simulator: cluster seed 2042).
			continue
		}
		if d.v.spec.Mode == ModeCluster && (!n.Reachable || !d.v.joined(n)) {
			return false, fmt.Sprintf("shard %d: %s not joined", s, n.Name)
		}
		if n == prim {
			continue
		}
		if !usable(n) || !follows(n, prim) || !n.Valkey.LinkUp {
			return false, fmt.Sprintf("shard %d: %s not in sync with %s", s, n.Name, prim.Name)
		}
	}
	return true, ""
}

func (d *decider) steadyActions(p Persisted, b *actionList) {
	d.ensureObjects(p, len(p.Shards), b)
	for s := range p.Shards {
		d.converge(p, s, true, b)
	}
	d.forgetGhosts(p, true, b)
	if target := d.targetPods(p); target < d.objectPods(p) {
		if _, blocked := d.shardsBlockScaleDown(p, target); !blocked {
			for _, n := range d.leavingBus(p, target) {
				b.add(RemoveNode{Target: Target{Shard: n.Shard, Node: n.Name}})
			}
		}
		if _, blocked := d.shardsBlock(p, target, false); !blocked {
			for s := range p.Shards {
				for _, n := range d.toDetachForRemoval(p, s, target) {
					b.add(Detach{Target: TargetOf(s, n)})
				}
			}
		}
	}
	if d.v.spec.Mode == ModeSentinel {
		if asked := d.sentinelNotBuilt(p); asked != "" {
			b.wait(Wait{Kind: WaitSentinelNotBuilt, Detail: asked})
		}
		if w := d.sentinelScalingWait(p); !w.IsZero() {
			b.wait(w)
		}
		d.sentinelRollActions(p, b)
	}
	if why := d.closeWritesWaits(p); why != "" {
		b.wait(Wait{Kind: WaitCloseWrites, Detail: why})
	}
	if why := d.switchoverWaits(p); why != "" {
		b.wait(Wait{Kind: WaitSwitchover, Detail: why})
	}
	if why := d.hibernateWaits(p); why != "" {
		b.wait(Wait{Kind: WaitHibernate, Detail: why})
	}
	if why := d.leavingWaits(p); why != "" {
		b.wait(Wait{Kind: WaitLeaving, Detail: why})
	}
	if why := d.restoreWaits(p); why != "" {
		b.wait(Wait{Kind: WaitRestore, Detail: why})
	}
	if len(b.actions) == 0 {
		ok, notConverged := d.converged(p)
		if target := d.targetPods(p); d.scaling(p) {
			why, _ := d.scaleDownBlocked(p, target)
			w := Wait{Kind: WaitScaleBlocked, Detail: why}
			if d.handOverWaits(p, target) {
				// A hand-over starts only from a converged cluster, and in the Sentinel
				// topology with the sentinels ready: say what it waits for.
				w.Also = notConverged
				if ok {
					w.Also = d.scaleDownHandOverWaits(p, target)
				}
			}
			b.wait(w)
		}
		if !ok {
			b.wait(Wait{Kind: WaitNotConverged, Detail: notConverged})
		}
	}
	if _, unknown := d.openMoves(); len(unknown) > 0 {
		// Not a reason to reshard (the machine will not touch them) but a slot served
		// half-way: say so while it lasts, not only once a resharding starts (after the
		// reasons above, which are the operator's own work).
		b.wait(openSlotsUnknownWait(unknown))
	}
	d.rotationActions(p, b)
	d.certificateActions(b)
}

// ensureObjects asks for the owned objects when they differ from what they must be now:
// shards shards of objectPods pods at the spec's revision.
func (d *decider) ensureObjects(p Persisted, shards int, b *actionList) {
	shards = d.leavingShards(shards, b)
	want := Objects{Shards: shards, Replicas: d.objectPods(p) - 1, Revision: d.v.spec.Revision, Sentinels: d.sentinelObjects(p)}
	if want.Sentinels > 0 {
		want.SentinelRevision = d.v.spec.SentinelRevision
	}
	if d.obs.Objects == want {
		return
	}
	a := EnsureObjects{Shards: want.Shards, Replicas: want.Replicas, Revision: want.Revision, Sentinels: want.Sentinels, SentinelRevision: want.SentinelRevision}
	if want.Replicas < d.obs.Objects.Replicas {
		for s := 0; s < shards && s < len(p.Shards); s++ {
			a.Keep = append(a.Keep, Proc{Node: p.Shards[s].Primary, RunID: p.Shards[s].RunID})
		}
	}
	b.add(a)
}

// converge brings shard s to its record: stray masters are fenced then demoted, replicas that
// follow something else are re-pointed, and (open) the primary is opened for writes. Nothing
// is done while the recorded primary is not healthy: that is primary-lost's business.
func (d *decider) converge(p Persisted, s int, open bool, b *actionList) {
	if d.v.spec.Mode == ModeSentinel && d.sentinelConverge(p, s, b) {
		return
	}
	rec := p.Shards[s]
	prim := d.v.node(rec.Primary)
	if !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary {
		_, failover, _ := d.failoverOf(p, s, nil)
		why := failover.wait(WaitFailover, rec.Primary)
		if failover.Fault.Kind == FaultNone {
			why = Wait{Kind: WaitPrimaryNotAnswering, Shard: s, Node: rec.Primary}
		}
		if h, _ := d.primaryHealth(p, s); h == primaryUnreachable || h == primarySuspected {
			d.sealReplicas(s, prim, b)
		}
		b.wait(why)
		return
	}
	for _, n := range d.v.shard(s) {
		// The primary answers: a seal has done its part (a replica sealed while it did not
		// must be able to link again; a sealed node promoted since keeps its password for the
		// day it follows again).
		if usable(n) && !n.Valkey.Sealed.At.IsZero() {
			b.add(Unseal{Target: TargetOf(s, n)})
		}
	}
	if open && d.v.spec.CloseWrites {
		d.keepWritesClosed(s, prim, b)
	} else if open && (prim.Valkey.WritesFenced || prim.Valkey.SyncFenced) {
		if richer := d.sentinelRicher(p, s, prim); richer != "" {
			b.wait(Wait{Kind: WaitSentinelPickLacksData, Shard: s, Node: prim.Name, Detail: richer})
		} else {
			b.add(OpenWrites{Target: TargetOf(s, prim)})
		}
	}
	for _, n := range d.v.shard(s) {
		if n == prim || !usable(n) {
			continue
		}
		if d.offTheBus(p, n) {
			continue // a node that left the cluster bus for a scale-down: its pod goes next
		}
		if n.Valkey.Role == RolePrimary {
			if d.handOverHalfWay(p, s, n) {
				b.wait(Wait{Kind: WaitHandOverFinishing, Shard: s, Node: n.Name, Peer: prim.Name})
				continue
			}
			if !n.Valkey.WritesFenced || !n.Valkey.SyncFenced {
				b.add(Fence{Target: TargetOf(s, n)})
			}
			if rec.awaitsResync(n.Name) {
				b.wait(deposedWaits(s, n))
				continue
			}
			if d.v.spec.Mode == ModeCluster && len(n.Valkey.Slots) > 0 {
				d.strayOwner(s, discarded(p, rec, n), n, prim, b)
				continue
			}
			b.add(d.replicaOf(s, n, prim))
			continue
		}
		// In cluster mode a restarted replica follows its primary again by itself (nodes.conf),
		// with the client user still off from start-up: ReplicaOf (CLUSTER REPLICATE, sent
		// nothing when it already follows) turns it on, so that it serves reads and lets clients
		// (valkey-cli --cluster, cluster clients) authenticate (found on real Valkey).
		if !follows(n, prim) || (d.v.spec.Mode == ModeCluster && n.Valkey.WritesFenced) {
			if d.detachedForRemoval(p, n) {
				continue // detached for a scale-down: its pod goes next
			}
			if rec.awaitsResync(n.Name) {
				b.wait(deposedWaits(s, n))
				continue
			}
			b.add(d.replicaOf(s, n, prim))
		}
	}
	if d.v.spec.Mode == ModeCluster {
		for _, n := range d.v.shard(s) {
			// In Steady a node that already left the bus for a scale-down stays off it, also
			// while the scale-down waits for something else (it would rejoin as an empty
			// master, only to be removed again). Other states keep every pod the objects ask
			// for as a full member (regression scale-down-recorded-before-a-restore).
			stayOff := p.State == Steady && d.offTheBus(p, n)
			if usable(n) && !d.v.joined(n) && !d.leaving(p, n) && !stayOff {
				b.add(AddNode{Target: TargetOf(s, n)})
			}
		}
	}
}

// strayOwner handles a node of shard s that serves slots in its own view while prim, the
// recorded primary, is another node: Valkey refuses to make a node that serves slots a replica.
// While prim serves none (it was elected for its data, a primary without slots, say an old
// primary that came back after a takeover, while the node that took its slots over restarted
// empty from nodes.conf), an empty stray gives its slots to prim (it then follows prim like any
// primary without slots). One that holds keys and is deposed (recorded resyncing: its data was
// weighed at the election and prim's chosen, and its resync replaces it anyway) loses its slots
// to prim's newer claim (TakeSlotsOver; found by the simulator: a deposed primary restarted
// with its nodes.conf kept serving the slots while the elected node served none, and the shard
// waited for good, sim/testdata/regressions/cluster-deposed-stray-serves-the-slots.sched). Any
// other stray with keys is left to the user, said why. While prim serves slots too, the stray
// has not heard of prim's newer claim yet: gossip settles it.
//
// The empty stray's slots move to prim by a slot migration within the shard (no key moves:
// it holds none; SETSLOT NODE on every primary gives prim the newer claim), never by freeing
// them: free slots carry no trace of the shard whose keys they hold, and a resharding would
// assign them by its plan, to a shard without those keys (found by the simulator).
func (d *decider) strayOwner(s int, discard string, n, prim *Node, b *actionList) {
	switch {
	case overlaps(prim.Valkey.Slots, n.Valkey.Slots):
		b.wait(Wait{Kind: WaitStrayGossip, Shard: s, Node: n.Name, Peer: prim.Name})
	case n.Valkey.Keys == 0:
		// Also when prim serves part of them already (a move of several ranges cut short):
		// gossip never takes from a node slots nobody else claims.
		for _, r := range n.Valkey.Slots {
			d.migrate(s, s, n, prim, r, b)
		}
	case discard != "" && len(prim.Valkey.Slots) == 0:
		b.add(TakeSlotsOver{Target: TargetOf(s, prim), From: n.Name, FromRunID: n.Valkey.RunID, Slots: n.Valkey.Slots})
		b.wait(Wait{Kind: WaitStrayTakenOver, Shard: s, Node: n.Name, Peer: prim.Name, Detail: discard, N: n.Valkey.Keys})
	default:
		b.wait(Wait{Kind: WaitStrayHoldsKeys, Shard: s, Node: n.Name, Peer: prim.Name, N: n.Valkey.Keys})
	}
}

// discarded says why the data of n, a node of a shard whose record rec names another primary,
// is to be replaced by the primary's ("": it is not): a deposed pod recorded as resyncing (its
// data was weighed at the election, and its resync replaces it), or, while a restore runs, a
// node that does not hold the restore's data (the restore replaces the shard's data).
func discarded(p Persisted, rec ShardRecord, n *Node) string {
	if _, ok := rec.deposedOf(n.Name); ok {
		return "deposed by a failover"
	}
	if p.State == Restoring && p.Op.Restore.Request != "" && n.Valkey.Snapshot != p.Op.Restore.Request {
		return "not holding the restore's data"
	}
	return ""
}

// overlaps reports whether two sets of slot ranges share a slot.
func overlaps(a, b []SlotRange) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Start <= y.End && y.Start <= x.End {
				return true
			}
		}
	}
	return false
}

func (d *decider) replicaOf(s int, n, prim *Node) Action {
	return ReplicaOf{Target: TargetOf(s, n), Primary: prim.Name, PrimaryIP: prim.Pod.IP, PrimaryRunID: prim.Valkey.RunID}
}
