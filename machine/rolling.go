package machine

import (
	"fmt"
	"strings"
)

// Rolling restarts pods onto Op.Roll.Revision, one pod at a time and only from a converged cluster:
// replicas first, then each shard's primary after handing its role over to a caught-up
// replica (FAILOVER TO), so no acknowledged write is lost and writes pause only for the
// hand-over. A shard without replicas restarts its primary in place (WithoutHandOver).
// Progress is the pods' revisions, so an operator restart or a failover in between loses
// nothing: the next Rolling continues with the pods still on another revision.

func guardSpecChanged(d *decider) (outcome, bool) {
	p := d.p
	spec := d.v.spec
	if d.handOverUnresolved(p) {
		return outcome{}, false
	}
	var why string
	switch p.State {
	case Rolling:
		if spec.Revision != p.Op.Roll.Revision {
			why = fmt.Sprintf("revision changed from %s to %s during the rollout", p.Op.Roll.Revision, spec.Revision)
		}
	case Resharding:
		if spec.Shards != p.Op.Reshard.Shards {
			why = fmt.Sprintf("shard count changed from %d to %d during the resharding", p.Op.Reshard.Shards, spec.Shards)
		}
	case FailingOver:
		// Only a scale-down hand-over has a goal in the spec; a failover is never aborted
		// and a switchover that no longer matches its request is switchover-stale's.
		if p.Op.Election.Planned && p.Op.Switchover.Pods > 0 && d.specPods() != p.Op.Switchover.Pods {
			why = fmt.Sprintf("shard %d: replica count changed to %d during the hand-over for the scale-down to %d pod(s) per shard", p.Op.Election.Shard, spec.Replicas, p.Op.Switchover.Pods)
		}
	}
	if why == "" {
		return outcome{}, false
	}
	next := p
	next.Op = Operation{}
	return outcome{next: next, message: why}, true
}

// guardHandOverStarted records the replica the next hand-over goes to, before asking for it.
func guardHandOverStarted(d *decider) (outcome, bool) {
	p := d.p
	s, t := d.nextHandOver(p)
	if t == nil || (p.Op.HandOver.To == t.Name && p.Op.HandOver.Shard == s) {
		return outcome{}, false
	}
	if p.Op.HandOver.To != "" && p.Op.HandOver.Shard == s && d.handOverUnresolved(p) {
		return outcome{}, false // the recorded hand-over may be under way: it is settled first
	}
	next := p
	next.Op.HandOver = HandOverMark{Shard: s, To: t.Name}
	return outcome{next: next, message: fmt.Sprintf("shard %d: %s hands over to %s before it is rolled", s, p.Shards[s].Primary, t.Name)}, true
}

// nextHandOver finds the shard whose primary is the next pod to roll and the replica it
// hands over to, when the cluster is converged and every other pod of that shard is rolled.
func (d *decider) nextHandOver(p Persisted) (int, *Node) {
	if ok, _ := d.converged(p); !ok {
		return 0, nil
	}
	for s := range p.Shards {
		rec := p.Shards[s]
		var prim *Node
		for _, n := range d.v.shard(s) {
			if n.Name == rec.Primary {
				prim = n
			} else if n.Pod.Revision != p.Op.Roll.Revision {
				return 0, nil // a replica is rolled first
			}
		}
		if prim == nil || prim.Pod.Revision == p.Op.Roll.Revision {
			continue
		}
		return s, d.rollHandOverTarget(p, s)
	}
	return 0, nil
}

// rollHandOverTarget is the replica shard s's primary hands over to before it is rolled: the
// one recorded while it is still a caught-up replica (another replica's offset passing it for
// a moment while writes are paused must not start a second hand-over beside the first: seen
// on the real cluster, a FAILOVER TO one replica recorded, then another recorded and asked
// for while the first was under way), else the best one now.
func (d *decider) rollHandOverTarget(p Persisted, s int) *Node {
	if p.Op.HandOver.To != "" && p.Op.HandOver.Shard == s {
		if t, ok := d.switchoverTarget(p, s, p.Op.HandOver.To); ok {
			return t
		}
	}
	return d.handOverTarget(p, s)
}

func guardRolloutComplete(d *decider) (outcome, bool) {
	if len(d.staleRevision(d.p.Op.Roll.Revision)) > 0 {
		return outcome{}, false
	}
	if ok, _ := d.converged(d.p); !ok {
		return outcome{}, false
	}
	next := d.p
	next.Op = Operation{}
	return outcome{next: next, message: fmt.Sprintf("every pod runs revision %s", d.p.Op.Roll.Revision)}, true
}

func (d *decider) rollingActions(p Persisted, b *actionList) {
	d.ensureObjects(p, len(p.Shards), b)
	for s := range p.Shards {
		d.converge(p, s, true, b)
	}
	if len(b.actions) > 0 {
		return
	}
	if ok, why := d.converged(p); !ok {
		b.wait(Wait{Kind: WaitNotConverged, Detail: why})
		return
	}
	// Converged is Valkey's word; Kubernetes routes clients (Services) and counts disruptions
	// (the PodDisruptionBudget) by the readiness probe, which lags it: the next pod rolls only
	// once the last one is Ready there too (found on the real cluster: a roll had two of three
	// pods not Ready at once).
	if notReady := d.podsNotReady(); len(notReady) > 0 {
		b.wait(Wait{Kind: WaitPodsNotReady, Detail: strings.Join(notReady, ", ")})
		return
	}
	for s := range p.Shards {
		rec := p.Shards[s]
		var prim *Node
		for _, n := range d.v.shard(s) {
			if n.Name == rec.Primary {
				prim = n
				continue
			}
			if n.Pod.Revision != p.Op.Roll.Revision {
				rollPod(b, RollPod{Shard: s, Node: n.Name, Revision: p.Op.Roll.Revision}, n)
				return
			}
		}
		if prim == nil || prim.Pod.Revision == p.Op.Roll.Revision {
			continue
		}
		if t := d.rollHandOverTarget(p, s); t != nil {
			if d.v.spec.Mode == ModeSentinel {
				// roll-hand-over takes it to FailingOver, where a sentinel carries it out.
				why := d.sentinelHandOverBlocked(p, s, t)
				if why == "" {
					why = "recorded at the next observation"
				}
				b.wait(Wait{Kind: WaitSentinelHandOver, Shard: s, Node: t.Name, Peer: prim.Name, Detail: why})
				return
			}
			if p.Op.HandOver.To != t.Name || p.Op.HandOver.Shard != s {
				b.wait(Wait{Kind: WaitHandOverNotRecorded, Shard: s, Node: prim.Name, Peer: t.Name})
				return
			}
			b.add(HandOver{Shard: s, From: prim.Name, FromRunID: prim.Valkey.RunID, To: t.Name, ToRunID: t.Valkey.RunID, ToIP: t.Pod.IP})
			return
		}
		if len(d.v.shard(s)) > 1 {
			b.wait(Wait{Kind: WaitNoHandOverTarget, Shard: s, Node: prim.Name})
			return
		}
		rollPod(b, RollPod{Shard: s, Node: prim.Name, Revision: p.Op.Roll.Revision, WithoutHandOver: true}, prim)
		return
	}
}

// rollPod asks for n's pod to be rolled, unless its deletion was asked for already: a second
// one would only be another API write; the roll waits for it to stop.
func rollPod(b *actionList, a RollPod, n *Node) {
	if n.Pod.Terminating {
		b.wait(Wait{Kind: WaitRollingPodStopping, Shard: n.Shard, Node: n.Name})
		return
	}
	b.add(a)
}

// handOverTarget is the replica of shard s a primary hands over to: linked, in the same
// history, on an ordinal that stays, with the highest offset (lowest ordinal among equals).
func (d *decider) handOverTarget(p Persisted, s int) *Node {
	var best *Node
	for _, n := range d.v.shard(s) {
		if _, ok := d.switchoverTarget(p, s, n.Name); !ok {
			continue
		}
		if d.v.spec.Mode == ModeSentinel && (closed(n) || n.Valkey.HeldBack) {
			continue // at replica-priority 0, the sentinels cannot pick it
		}
		if best == nil || n.Valkey.Offset > best.Valkey.Offset {
			best = n
		}
	}
	return best
}

// podsNotReady lists the existing pods whose Ready condition is not True.
func (d *decider) podsNotReady() []string {
	var out []string
	for _, n := range d.obs.Nodes {
		if n.Pod.Exists && !n.Pod.Ready {
			out = append(out, n.Name)
		}
	}
	return out
}
