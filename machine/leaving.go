package machine

import "fmt"

// A primary's pod deleted on purpose (kubectl delete pod, an eviction by kubectl drain or a
// node upgrade, a StatefulSet that removes it) need not cost a failover: the pod's preStop hook
// keeps the process running while it is a primary with replicas (up to a bound, 15 s in the
// pod template), so the machine sees the pod terminating with its process still the
// recorded primary and hands the role over first, as a requested switchover does (FAILOVER TO
// after the target caught up: no acknowledged write lost, a write gap of a pause). Once the
// node follows the new primary the hook lingers 2 s, so that this observation, the hand-over's
// own evidence, is seen (failover-complete), then the pod stops as a replica.
//
// Without a caught-up replica (a shard of one, replicas behind or unlinked) nothing is
// recorded: the hook lets the pod stop at its bound and the loss is a failover, as before.

func guardPrimaryLeaving(d *decider) (outcome, bool) {
	p := d.p
	for s, rec := range p.Shards {
		if !d.podLeaving(rec) || !d.primaryServes(rec) {
			continue
		}
		t := d.handOverTarget(p, s)
		if t == nil || d.sentinelHandOverBlocked(p, s, t) != "" {
			continue
		}
		next := p
		next.Op = Operation{
			Election:   Election{Shard: s, Lost: rec.Primary, LostRunID: rec.RunID, LostHistory: rec.History, Planned: true},
			Switchover: SwitchoverGoal{To: t.Name, Leaving: true},
			HandOver:   HandOverMark{Shard: s, To: t.Name},
		}
		return outcome{next: next, why: Reason{Kind: ReasonHandOverStarted, Shard: s, Goal: GoalLeaving, Node: rec.Primary, Peer: t.Name}}, true
	}
	return outcome{}, false
}

// podLeaving reports whether the recorded process of rec still runs in a pod whose deletion was
// asked for.
func (d *decider) podLeaving(rec ShardRecord) bool {
	prim := d.v.node(rec.Primary)
	return alive(prim, rec.RunID) && prim.Pod.Terminating
}

// leavingWaits says why a primary whose pod is being deleted is not handed over ("": none
// is, or it is), for Steady's waiting message.
func (d *decider) leavingWaits(p Persisted) string {
	for s, rec := range p.Shards {
		if !d.podLeaving(rec) {
			continue
		}
		t := d.handOverTarget(p, s)
		if t == nil {
			return fmt.Sprintf("shard %d: %s's pod is being deleted and no caught-up replica can take over: it stops as the primary, and a failover follows", s, rec.Primary)
		}
		if why := d.sentinelHandOverBlocked(p, s, t); why != "" {
			return fmt.Sprintf("shard %d: %s's pod is being deleted and the sentinels are not ready for a hand-over to %s (%s): it stops as the primary unless they are before its preStop hook lets it go, and the sentinels fail it over", s, rec.Primary, t.Name, why)
		}
	}
	return ""
}
