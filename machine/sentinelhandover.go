package machine

import (
	"fmt"
	"strings"
)

// The Sentinel topology's planned hand-over (a requested switchover): the sentinels carry it
// out, as they carry out every change of primary in this topology, and the machine prepares it
// so that it loses nothing and picks the node asked for.
//
//  1. switchover-requested (Steady -> FailingOver, Election.Planned) takes, beside the
//     Replication topology's conditions, every sentinel of the spec answering and naming the
//     recorded primary under the recorded config epoch, with no failover and the primary down
//     in none's view, and the target open (sentinelHandOverReady): a hand-over is asked of
//     sentinels that agree, or not at all.
//  2. Every replica but the target is held back (HoldBack: replica-priority 0, its
//     replication user on). Sentinel picks the lowest priority above 0, so once a sentinel has
//     read those priorities from the replicas' INFO (every 10 s; SENTINEL REPLICAS shows what
//     it read), its pick can only be the target.
//  3. SentinelHandOver on such a sentinel: the primary's client writes are closed, the target
//     is seen at the primary's offset, and the sentinel is sent SENTINEL FAILOVER. It leads a
//     forced failover at once (no vote), promotes the target, and re-points the old primary and
//     the other replicas to it; clients learn the new primary from the sentinels
//     (+switch-master).
//  4. sentinel-promoted records the target with the failover's epoch, as for any failover
//     the sentinels make; in Steady, converge opens the old primary (now a replica) and gives
//     the held-back replicas their priority back (OpenWrites).
//
// switchover-stale ends the hand-over when it no longer applies (the request withdrawn or
// changed, the target gone) while no sentinel fails the group over; converge then opens the
// primary again. While a sentinel fails it over, the sentinels decide and the machine records
// what they chose.

// sentinelHandOverReady says why a hand-over to t may not start in the Sentinel topology (""
// when it may): every sentinel of the spec answers and monitors the group, none reports a
// failover or the primary down or names a primary under a config epoch newer than the
// recorded one, and a majority name the recorded primary under the recorded epoch; t, a
// replica, is open (its users on, not held back), so that Sentinel may pick it and it serves
// its replicas once promoted. A sentinel left naming another node under an epoch no newer than
// the record's (Sentinel's own split, which hellos under equal epochs never heal) does not
// stand in the way: the hand-over's failover comes under a newer epoch, which it takes.
func (d *decider) sentinelHandOverReady(rec ShardRecord, prim, t *Node) string {
	if !d.sentinelsAllAnswer() {
		return fmt.Sprintf("not every sentinel answers the operator (%s)", d.sentinelsSay())
	}
	for _, s := range d.obs.Sentinels {
		switch {
		case !s.Monitoring:
			return s.Name + " does not monitor the group yet"
		case s.FailingOver || s.PrimaryDown:
			return s.Name + " reports a failover or the primary down"
		case s.ConfigEpoch > rec.ClaimEpoch:
			return fmt.Sprintf("%s names %s under config epoch %d, newer than the recorded %d", s.Name, s.PrimaryIP, s.ConfigEpoch, rec.ClaimEpoch)
		}
	}
	if !d.sentinelsAgree(rec, prim) {
		return "no majority of the sentinels names the recorded primary under the recorded epoch: " + d.sentinelsSay()
	}
	if t != nil && (t.Valkey.SyncFenced || t.Valkey.WritesFenced || t.Valkey.HeldBack) {
		return t.Name + " is not opened as a sync source yet"
	}
	return ""
}

// sentinelHandOverBlocked says why a planned hand-over of shard s to t may not start in the
// Sentinel topology ("" outside it, or when it may): the guards that start one (a switchover,
// a leaving primary's, a scale-down's, a rollout's) record it only when the sentinels are
// ready for it (sentinelHandOverReady).
func (d *decider) sentinelHandOverBlocked(p Persisted, s int, t *Node) string {
	if d.v.spec.Mode != ModeSentinel {
		return ""
	}
	rec := p.Shards[s]
	return d.sentinelHandOverReady(rec, d.v.node(rec.Primary), t)
}

// sentinelsUnsettled says why the Sentinel topology's shard is not converged beyond its data
// nodes ("" outside it, or when it is): a majority of the sentinels name the recorded primary
// under the recorded epoch with none failing it over, and every replica that follows the
// primary is opened as a sync source at its priority. Planned work (a rollout's next pod, a
// hand-over, a scale) starts only then: a replica restarted by the rollout comes up at
// replica-priority 0, and the next one restarted beside it would leave the sentinels fewer
// replicas to pick if the primary failed meanwhile.
func (d *decider) sentinelsUnsettled(rec ShardRecord) string {
	if d.v.spec.Mode != ModeSentinel {
		return ""
	}
	prim := d.v.node(rec.Primary)
	if failing := d.sentinelsFailingOver(); len(failing) > 0 {
		return "sentinel(s) " + strings.Join(failing, ", ") + " report a failover or the primary down"
	}
	if !d.sentinelsAgree(rec, prim) {
		return "no majority of the sentinels names the recorded primary under the recorded epoch: " + d.sentinelsSay()
	}
	for _, n := range d.v.shard(0) {
		if n != prim && usable(n) && follows(n, prim) && (closed(n) || n.Valkey.HeldBack) {
			return n.Name + " is not opened as a sync source yet"
		}
	}
	return ""
}

// guardRollHandOver (Sentinel topology, Rolling): the next pod to roll is a shard's primary
// and a replica may take over with the sentinels ready for it: record the hand-over, a
// planned FailingOver carried out as a switchover is (sentinelHandOverActions), marked as a
// rollout's (SwitchoverGoal.Rollout) so that its history says what it is for. The rollout
// resumes from Steady once the sentinels' pick is recorded: progress is the pods' revisions.
func guardRollHandOver(d *decider) (outcome, bool) {
	p := d.p
	s, t := d.nextHandOver(p)
	if t == nil || d.podsNotReady() != nil || d.sentinelHandOverBlocked(p, s, t) != "" {
		return outcome{}, false
	}
	rec := p.Shards[s]
	next := p
	next.Op = Operation{
		Election:   Election{Shard: s, Lost: rec.Primary, LostRunID: rec.RunID, LostHistory: rec.History, Planned: true},
		Switchover: SwitchoverGoal{To: t.Name, Rollout: true},
		HandOver:   HandOverMark{Shard: s, To: t.Name},
	}
	return outcome{next: next, why: Reason{Kind: ReasonHandOverStarted, Shard: s, Goal: GoalRollout, Node: rec.Primary, Peer: t.Name, Revision: p.Op.Roll.Revision}}, true
}

// sentinelHandOverActions are FailingOver's actions for a planned hand-over in the Sentinel
// topology: the objects; while a sentinel fails the group over or the hand-over no longer
// applies, what any failover of the sentinels asks (they decide; switchover-stale ends it);
// otherwise the other replicas held back, then the hand-over through the sentinel that has
// read their priorities.
func (d *decider) sentinelHandOverActions(p Persisted, b *actionList) {
	op := p.Op
	s := op.Election.Shard
	rec := p.Shards[s]
	prim := d.v.node(rec.Primary)
	t, ok := d.switchoverTarget(p, s, op.Switchover.To)
	if !ok || len(d.sentinelsFailingOver()) > 0 || !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary {
		d.sentinelFailoverActions(p, b)
		return
	}
	d.ensureObjects(p, len(p.Shards), b)
	d.sentinelMonitors(p, s, b)
	if linkedTo(t, prim) && closed(t) && d.sentinelsAgree(rec, prim) {
		// A target that restarted during the wait comes back closed (replica-priority 0);
		// linked again, it is opened as converge opens any replica of the recorded primary,
		// or the hand-over would wait for ever (found by the exploration).
		b.add(OpenWrites{Target: TargetOf(s, t)})
	}
	if why := d.sentinelHandOverReady(rec, prim, t); why != "" {
		b.wait(Wait{Kind: WaitSentinelHandOver, Shard: s, Node: t.Name, Peer: rec.Primary, Detail: why})
		return
	}
	held := false
	for _, n := range d.v.shard(s) {
		if n != t && n != prim && usable(n) && n.Valkey.Role == RoleReplica && !n.Valkey.SyncFenced && !n.Valkey.HeldBack {
			b.add(HoldBack{Target: TargetOf(s, n)})
			held = true
		}
	}
	if held {
		return
	}
	leader, why := d.sentinelToHandOver(rec, prim, t)
	if leader == nil {
		b.wait(Wait{Kind: WaitSentinelHandOver, Shard: s, Node: t.Name, Peer: rec.Primary, Detail: why})
		return
	}
	b.add(SentinelHandOver{SentinelTarget: SentinelTargetOf(*leader), HandOver: HandOver{Shard: s, From: prim.Name, FromRunID: prim.Valkey.RunID,
		To: t.Name, ToRunID: t.Valkey.RunID, ToIP: t.Pod.IP}})
}

// sentinelToHandOver is the first sentinel naming the recorded primary under the recorded
// epoch whose pick can only be t: it knows t at a priority
// above 0 and every other replica it knows at an address of one of the shard's pods at 0
// (read from their INFO since they were held back). An address no pod has is a replica that
// came back elsewhere: the sentinel finds it disconnected and never picks it. Nil, with what
// the sentinels have read, when none is.
func (d *decider) sentinelToHandOver(rec ShardRecord, prim, t *Node) (*Sentinel, string) {
	var seen []string
	for i, s := range d.obs.Sentinels {
		if s.PrimaryIP != prim.Pod.IP || s.ConfigEpoch != rec.ClaimEpoch {
			continue // its pick would be of another group's view
		}
		target, others := false, true
		var last []string
		for _, r := range s.Replicas {
			last = append(last, fmt.Sprintf("%s=%d", r.IP, r.Priority))
			switch n := d.nodeAt(r.IP); {
			case r.IP == t.Pod.IP:
				target = r.Priority > 0
			case n != nil && n.Shard == t.Shard && r.Priority > 0:
				others = false
			}
		}
		if target && others {
			if why := d.sentinelsReadAsPrimary(t); why != "" {
				return nil, why
			}
			return &d.obs.Sentinels[i], ""
		}
		seen = append(seen, fmt.Sprintf("%s [%s]", s.Name, strings.Join(last, " ")))
	}
	return nil, fmt.Sprintf("no sentinel has read the held-back replicas' priority 0 and %s's above 0 yet (they read each replica's INFO every 10 s): %s",
		t.Name, strings.Join(seen, ", "))
}

// sentinelsReadAsPrimary names the sentinels whose last INFO of t showed a primary ("" when
// none does): a sentinel that is not the hand-over's leader and has read t as a primary for
// longer than its wait (4 hello periods, 8 s) takes t, promoted, for a replica turned primary
// behind its back and points it at the old primary again, and the failover times out (seen
// on real sentinels: the old primary of a rollout's hand-over, handed the role back within
// one INFO period). Each sentinel reads a replica's INFO every 10 s.
func (d *decider) sentinelsReadAsPrimary(t *Node) string {
	var stale []string
	for _, s := range d.obs.Sentinels {
		for _, r := range s.Replicas {
			if r.IP == t.Pod.IP && r.ReportsPrimary {
				stale = append(stale, s.Name)
			}
		}
	}
	if len(stale) == 0 {
		return ""
	}
	return fmt.Sprintf("%s last read %s as a primary (they read each replica's INFO every 10 s) and would turn it back into a replica once promoted", strings.Join(stale, ", "), t.Name)
}

// handOverPicked reports whether a sentinel names the hand-over's target under a config epoch
// newer than the record's: the failover picked it, and the replicas held back may be given
// their priority again.
func (d *decider) handOverPicked(p Persisted) bool {
	if len(p.Shards) == 0 {
		return false
	}
	t := d.v.node(p.Op.Switchover.To)
	if t == nil || t.Pod.IP == "" {
		return false
	}
	for _, s := range d.obs.Sentinels {
		if s.Reachable && s.Monitoring && s.PrimaryIP == t.Pod.IP && s.ConfigEpoch > p.Shards[0].ClaimEpoch {
			return true
		}
	}
	return false
}

// releaseHeld gives every replica held back its priority again (OpenWrites: its users are on
// already), outside a hand-over that has not picked its target yet: left at 0, a replica with
// the data is one Sentinel's next failover may not pick, while one that lacks it may be (a
// restarted node Sentinel still lists at the priority it read before).
func (d *decider) releaseHeld(b *actionList) {
	for _, n := range d.v.shard(0) {
		if usable(n) && n.Valkey.HeldBack && !n.Valkey.WritesFenced && !n.Valkey.SyncFenced {
			b.add(OpenWrites{Target: TargetOf(0, n)})
		}
	}
}
