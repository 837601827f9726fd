package sim

import (
	"strings"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The failover (sentinel.c sentinelStartFailoverIfNeeded, sentinelFailoverStateMachine,
// sentinelSelectReplica, sentinelSendReplicaOf, sentinelFailoverSwitchToPromotedReplica):
// start on ODOWN with a new epoch, wait to be elected, select a replica, REPLICAOF NO ONE on
// it, wait until its INFO says primary (the failover's epoch becomes the master's config
// epoch), re-point the other replicas parallel-syncs at a time, then monitor the promoted
// replica as the master.

// startFailoverIfNeeded: the master is ODOWN, no failover runs, and the last one started (or
// the last vote for another sentinel) is at least twice failover-timeout old.
func (sw *SentinelWorld) startFailoverIfNeeded(s *sentinel) bool {
	m := s.m
	if !m.odown || m.failover != failoverNone || sw.w.tick-m.failoverStart < 2*s.m.set.FailoverTimeout {
		return false
	}
	sw.startFailover(s)
	sw.checkStart(s)
	return true
}

// startFailover is sentinelStartFailover: a new epoch, one above the sentinel's current one.
func (sw *SentinelWorld) startFailover(s *sentinel) {
	m := s.m
	s.currentEpoch++
	m.failover, m.failoverEpoch = failoverWaitStart, s.currentEpoch
	m.failoverStart, m.failoverChanged = sw.w.tick, sw.w.tick
	sw.event(s, "+try-failover", m.failoverEpoch, "%s", m.inst.addr)
}

// failoverStateMachine is sentinelFailoverStateMachine.
func (sw *SentinelWorld) failoverStateMachine(s *sentinel) {
	m, now := s.m, sw.w.tick
	switch m.failover {
	case failoverWaitStart:
		leader, votes := sw.getLeader(s, m.failoverEpoch)
		if leader != s.myid && !m.forced {
			// Not elected (yet): abort after the election timeout (at most failover-timeout).
			if now-m.failoverStart > min(int64(sentinelElectionTimeout), s.m.set.FailoverTimeout) {
				sw.event(s, "-failover-abort-not-elected", m.failoverEpoch, "")
				sw.abortFailover(s)
			}
			return
		}
		if !m.forced {
			sw.elected[m.failoverEpoch] = append(sw.elected[m.failoverEpoch], s.myid)
			sw.event(s, "+elected-leader", m.failoverEpoch, "%d votes", votes)
			sw.checkElected(s)
		}
		m.failover, m.failoverChanged = failoverSelectReplica, now
	case failoverSelectReplica:
		r := sw.selectReplica(s)
		if r == nil {
			sw.event(s, "-failover-abort-no-good-slave", m.failoverEpoch, "")
			sw.abortFailover(s)
			return
		}
		sw.event(s, "+selected-slave", m.failoverEpoch, "%s at %s", sw.NodeAt(r.addr), r.addr)
		r.promoted, m.promoted = true, r
		m.failover, m.failoverChanged = failoverSendNoOne, now
	case failoverSendNoOne:
		if m.promoted.disconnected {
			if now-m.failoverChanged > s.m.set.FailoverTimeout {
				sw.event(s, "-failover-abort-slave-timeout", m.failoverEpoch, "")
				sw.abortFailover(s)
			}
			return
		}
		if sw.sendReplicaOf(s, m.promoted, "") {
			m.failover, m.failoverChanged = failoverWaitPromotion, now
		}
	case failoverWaitPromotion:
		// The promoted replica's INFO moves the failover on (refreshInfo).
		if now-m.failoverChanged > s.m.set.FailoverTimeout {
			sw.event(s, "-failover-abort-slave-timeout", m.failoverEpoch, "")
			sw.abortFailover(s)
		}
	case failoverReconfReplicas:
		sw.reconfNextReplica(s)
	}
}

// abortFailover is sentinelAbortFailover (before the promoted replica said primary).
func (sw *SentinelWorld) abortFailover(s *sentinel) {
	m := s.m
	m.failover, m.forced, m.byOperator, m.failoverChanged = failoverNone, false, false, sw.w.tick
	if m.promoted != nil {
		m.promoted.promoted = false
		m.promoted = nil
	}
}

// selectReplica is sentinelSelectReplica: among the replicas not SDOWN, answering PINGs
// (within five ping periods), with a fresh INFO (five seconds while the master is SDOWN,
// else three INFO periods), whose link to the master has not been down longer than ten
// down-after periods plus the master's SDOWN time, and with a priority above 0: the lowest
// priority, then the largest replication offset, then the smallest run id.
func (sw *SentinelWorld) selectReplica(s *sentinel) *instance {
	m, now := s.m, sw.w.tick
	maxDown := 10 * s.m.set.DownAfter
	if m.inst.sdown {
		maxDown += now - m.inst.sdownSince
	}
	validity := int64(3 * sentinelInfoPeriod)
	if m.inst.sdown {
		validity = 5 * sentinelPingPeriod
	}
	var best *instance
	for _, r := range m.replicas {
		if r.sdown || r.disconnected || now-r.lastAvail > 5*sentinelPingPeriod || r.priority == 0 ||
			r.infoRefresh == never || now-r.infoRefresh > validity || r.linkDownTime > maxDown {
			continue
		}
		if best == nil || betterReplica(r, best) {
			best = r
		}
	}
	return best
}

// betterReplica is compareReplicasForPromotion: a before b.
func betterReplica(a, b *instance) bool {
	if a.priority != b.priority {
		return a.priority < b.priority
	}
	if a.offset != b.offset {
		return a.offset > b.offset
	}
	return strings.ToLower(a.runID) < strings.ToLower(b.runID)
}

// sendReplicaOf is sentinelSendReplicaOf: MULTI, REPLICAOF (NO ONE when addr is ""), CONFIG
// REWRITE, CLIENT KILL, EXEC, replies discarded. It is sent only over a working link. On the
// world's node, REPLICAOF NO ONE promotes it as Valkey does (a new history continuing the
// old) and REPLICAOF host re-points it (unchanged when it already follows that address).
// The operator's start-up fence does not stand in Sentinel's way: a node Sentinel promotes
// takes writes and serves replicas (the model's assumption about how the Sentinel topology
// will run its data nodes).
func (sw *SentinelWorld) sendReplicaOf(s *sentinel, inst *instance, addr string) bool {
	w := sw.w
	n := w.byIP(inst.addr)
	if !sw.talksToNode(s, n) {
		return false
	}
	if addr == "" {
		// REPLICAOF NO ONE changes no ACL user: a node the operator fenced (one that
		// restarted comes up so) stays closed to clients and replicas.
		w.sentinelPromoted(n, s.m != nil && s.m.byOperator)
		w.promote(n)
		n.demoteTo, n.demoteAt = "", 0
		w.note("sentinel %s: REPLICAOF NO ONE on %s", s.myid, n.name)
		return true
	}
	if n.role == machine.RoleReplica && n.masterIP == addr {
		return true
	}
	w.demote(n, addr)
	w.note("sentinel %s: REPLICAOF %s on %s", s.myid, addr, n.name)
	return true
}

// reconfNextReplica is sentinelFailoverReconfNextReplica: REPLICAOF the promoted replica to
// the others, parallel-syncs at a time; one sent more than ten seconds ago without progress
// counts as done. Then sentinelFailoverDetectEnd.
func (sw *SentinelWorld) reconfNextReplica(s *sentinel) {
	m, now := s.m, sw.w.tick
	inProgress := 0
	for _, r := range m.replicas {
		if r.reconfSent || r.reconfInProgress {
			inProgress++
		}
	}
	for _, r := range m.replicas {
		if inProgress >= s.m.set.ParallelSyncs {
			break
		}
		if r.promoted || r.reconfDone {
			continue
		}
		if r.reconfSent && now-r.reconfSentTime > sentinelReplicaReconfTimeout {
			r.reconfSent, r.reconfDone = false, true
		}
		if r.reconfSent || r.reconfInProgress || r.disconnected {
			continue
		}
		if sw.sendReplicaOf(s, r, m.promoted.addr) {
			r.reconfSent, r.reconfSentTime = true, now
			inProgress++
		}
	}
	sw.detectEnd(s)
}

// detectEnd is sentinelFailoverDetectEnd: the failover ends once every replica not SDOWN is
// re-pointed, or on failover-timeout (the leader then sends REPLICAOF to the rest, best
// effort).
func (sw *SentinelWorld) detectEnd(s *sentinel) {
	m, now := s.m, sw.w.tick
	if m.promoted == nil || m.promoted.sdown {
		return
	}
	notDone := 0
	for _, r := range m.replicas {
		if !r.promoted && !r.reconfDone && !r.sdown {
			notDone++
		}
	}
	timeout := now-m.failoverChanged > s.m.set.FailoverTimeout
	if timeout {
		notDone = 0
	}
	if notDone == 0 {
		sw.event(s, "+failover-end", m.failoverEpoch, "")
		m.failover, m.failoverChanged = failoverUpdateConfig, now
	}
	if timeout {
		for _, r := range m.replicas {
			if r.promoted || r.reconfDone || r.reconfSent || r.disconnected {
				continue
			}
			if sw.sendReplicaOf(s, r, m.promoted.addr) {
				r.reconfSent = true
			}
		}
	}
}

// switchToPromoted is sentinelFailoverSwitchToPromotedReplica: the promoted replica becomes
// the monitored master.
func (sw *SentinelWorld) switchToPromoted(s *sentinel) {
	m := s.m
	to := m.inst.addr
	if m.promoted != nil {
		to = m.promoted.addr
	}
	sw.event(s, "+switch-master", m.configEpoch, "%s -> %s", m.inst.addr, to)
	sw.resetAndChangeAddress(s, to)
}

// resetAndChangeAddress is sentinelResetPrimaryAndChangeAddress: the master is monitored at
// addr from scratch (known sentinels kept); the known replicas, less the one at addr, plus
// the old master's address, are its replicas. A failover in progress ends.
func (sw *SentinelWorld) resetAndChangeAddress(s *sentinel, addr string) {
	old, now := s.m, sw.w.tick
	m := &monitored{set: old.set, inst: newInstance(addr, now, machine.RolePrimary, 0), configEpoch: old.configEpoch,
		sentinels: old.sentinels, leaderEpoch: old.leaderEpoch, failoverStart: never, failoverChanged: never, odownSince: never}
	m.inst.actPing = now // sentinelResetPrimary: act_ping_time = now
	for _, r := range old.replicas {
		if r.addr != addr {
			m.replicas = append(m.replicas, newInstance(r.addr, now, machine.RoleReplica, sentinelDefaultPriority))
		}
	}
	if old.inst.addr != addr && m.replicaAt(old.inst.addr) == nil {
		m.replicas = append(m.replicas, newInstance(old.inst.addr, now, machine.RoleReplica, sentinelDefaultPriority))
	}
	m.sortReplicas()
	s.m = m
}
