package sim

import (
	"fmt"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The Sentinel topology in the simulated world: the sentinel model (sentinel*.go) runs inside
// Sim.advance, after the data nodes' tick and before the world's checks, and the operator
// observes each sentinel beside the data nodes. The sentinels start once the operator has
// recorded the bootstrap's primary, monitoring it, as the topology's sentinel pods do when
// the operator renders their configuration from the recorded primary.

// startOrTickSentinels starts the sentinels once the bootstrap's primary is recorded, then
// runs one tick of theirs per world tick.
func (s *Sim) startOrTickSentinels() {
	w := s.w
	if w.topo.Sentinel == nil {
		return
	}
	if w.sentinels != nil {
		w.sentinels.tick()
		return
	}
	p := s.op.status.Persisted
	if p.State == "" || p.State == machine.Bootstrapping || len(p.Shards) == 0 {
		return
	}
	var primary *node
	var replicas []string
	for _, n := range w.nodes {
		switch {
		case n.name == p.Shards[0].Primary && n.exists:
			primary = n
		case n.shard == 0 && n.exists:
			replicas = append(replicas, n.ip)
		}
	}
	if primary == nil {
		return
	}
	w.sentinels = newSentinelWorld(s, *w.topo.Sentinel, nil, primary.ip)
	w.sentinels.knowEachOther(replicas)
	w.note("sentinels: %d start, monitoring %s (%s), knowing its replicas and each other", w.topo.Sentinel.Sentinels, primary.name, primary.ip)
}

// knowEachOther gives every sentinel the replicas at addrs and the other sentinels, as the
// configuration the operator renders for them says (sentinel known-replica, known-sentinel
// and myid lines): a sentinel that has not yet had the master's INFO when it is lost (the
// first seconds after they start) would know no replica to promote, and sentinels find each
// other only through hellos on the data nodes.
func (sw *SentinelWorld) knowEachOther(addrs []string) {
	now := sw.w.tick
	for _, s := range sw.sentinels {
		for _, a := range addrs {
			s.m.replicas = append(s.m.replicas, newInstance(a, now, machine.RoleReplica, sentinelDefaultPriority))
		}
		s.m.sortReplicas()
		for _, o := range sw.sentinels {
			if o != s {
				s.m.sentinels = append(s.m.sentinels, &peer{runID: o.myid, addr: o.ip, lastHello: now, lastDownReply: now, lastPub: now})
			}
		}
	}
}

// sentinelFault applies a fault of the sentinels' (a no-op before they start).
func (w *World) sentinelFault(f Fault) {
	sw := w.sentinels
	if sw == nil || f.Sentinel < 0 || f.Sentinel >= len(sw.sentinels) {
		return
	}
	switch f.Kind {
	case FaultKillSentinel:
		_ = sw.Apply(SentinelFault{Kind: SentinelKill, Sentinel: f.Sentinel})
	case FaultPauseSentinel:
		_ = sw.Apply(SentinelFault{Kind: SentinelPause, Sentinel: f.Sentinel, Ticks: f.Ticks})
	}
}

// sentinelSides places the sentinels on a partition's sides (all on side A when it is healed),
// and on a heal resumes the paused ones and starts the stopped ones from their config files.
func (w *World) sentinelSides(f Fault) {
	sw := w.sentinels
	if sw == nil {
		return
	}
	for _, s := range sw.sentinels {
		s.side = 0
	}
	switch f.Kind {
	case FaultPartition, FaultPartitionOneWay:
		for _, i := range f.Sentinels {
			if i >= 0 && i < len(sw.sentinels) {
				sw.sentinels[i].side = 1
			}
		}
	case FaultHeal:
		for i, s := range sw.sentinels {
			if s.pausedUntil > w.tick {
				s.pausedUntil = w.tick
			}
			if !s.running {
				_ = sw.Apply(SentinelFault{Kind: SentinelStart, Sentinel: i})
			}
		}
	}
}

// observeSentinels is what the operator's survey of the sentinels finds: each one it reaches
// answers SENTINEL MASTER for the group.
func (w *World) observeSentinels() []machine.Sentinel {
	sw := w.sentinels
	if sw == nil {
		return nil
	}
	out := make([]machine.Sentinel, 0, len(sw.sentinels))
	for _, s := range sw.sentinels {
		o := machine.Sentinel{Name: sentinelName(s.ordinal)}
		if sw.sentinelUp(s) && sw.sides(w.operatorSide, s.side) && sw.sides(s.side, w.operatorSide) {
			m := s.m
			o.Reachable, o.Monitoring = true, true
			o.PrimaryIP, o.ConfigEpoch = currentMasterAddr(m), m.configEpoch
			o.FailingOver, o.PrimaryDown = m.failover != failoverNone, m.odown
		}
		out = append(out, o)
	}
	return out
}

// sentinelName is the pod name of the sentinel with an ordinal.
func sentinelName(ordinal int) string { return fmt.Sprintf("sentinel-%d", ordinal) }

// sentinelPromoted is Sentinel's REPLICAOF NO ONE on n, for the checks. When n takes writes
// at once (its client user on: a replica the operator saw linked), Sentinel alone made it the
// writer: the WAIT-acknowledged writes of its shard it lacks are lost by Sentinel's choice (its
// rule is the last failover wins, and it skips replicas it finds disconnected or stale),
// counted as Sentinel's (Stats). A fenced n (it restarted) takes writes only once the operator
// opens it, so what it lacks then is the operator's loss: nothing is excused here. Either way n
// may take writes beside every primary of its shard until those are fenced, demoted or out of
// min-replicas-to-write (sentinelOverlap, from this tick).
func (w *World) sentinelPromoted(n *node) {
	if !n.writesFenced {
		for i := range w.writes {
			wr := &w.writes[i]
			if wr.waitAcked && !wr.exempt && !n.has.get(wr.id) && w.shardOfKey(wr.key) == n.shard {
				wr.exempt = true
				w.stats.SentinelLostWrites++
				w.note("sentinel: %s promoted without WAIT-acknowledged write %d (Sentinel's loss)", n.name, wr.id)
			}
		}
	}
	if w.sentinelOverlap == nil {
		w.sentinelOverlap = map[[2]string]int64{}
	}
	for _, m := range w.nodes {
		if m != n && m.shard == n.shard && m.exists && m.running && m.role == machine.RolePrimary {
			w.sentinelOverlap[[2]string{n.runID, m.runID}] = w.tick
		}
	}
}

// sentinelsOverlap reports whether a and b may both take writes by Sentinel's design: one was
// promoted by Sentinel while the other was a primary (sentinelPromoted).
func (w *World) sentinelsOverlap(a, b *node) bool {
	_, ab := w.sentinelOverlap[[2]string{a.runID, b.runID}]
	_, ba := w.sentinelOverlap[[2]string{b.runID, a.runID}]
	return ab || ba
}

// sentinelExcuses reports whether n, taking writes without the WAIT-acknowledged write wr, is
// Sentinel's design rather than a loss: n is a primary Sentinel replaced, still taking writes
// beside the one it promoted, which acknowledged wr and is still a primary (the replaced one's
// writes are the ones to go). lostBySentinel reports whether the write is lost by it: n is the
// promoted node and wr was acknowledged by the primary it replaced after the promotion.
func (w *World) sentinelExcuses(n *node, wr *writeRecord) (excused, lostBySentinel bool) {
	if at, ok := w.sentinelOverlap[[2]string{n.runID, wr.runID}]; ok && wr.tick >= at {
		return false, true
	}
	if _, ok := w.sentinelOverlap[[2]string{wr.runID, n.runID}]; ok {
		for _, m := range w.nodes {
			if m.runID == wr.runID && m.exists && m.running && m.role == machine.RolePrimary {
				return true, false
			}
		}
	}
	return false, false
}
