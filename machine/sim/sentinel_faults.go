package sim

import (
	"fmt"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Faults of the sentinel processes, and a person's SENTINEL FAILOVER. The network's faults
// are the world's (SentinelWorld.Partition places sentinels on a partition's sides).

// SentinelFaultKind names a fault of a sentinel process.
type SentinelFaultKind string

const (
	// SentinelKill stops a sentinel's process until SentinelStart.
	SentinelKill SentinelFaultKind = "sentinel-kill"
	// SentinelStart starts a stopped sentinel from its config file (its id, epochs, master,
	// known replicas and sentinels), as sentinel.c flushes it on every change.
	SentinelStart SentinelFaultKind = "sentinel-start"
	// SentinelPause freezes a sentinel for Ticks.
	SentinelPause SentinelFaultKind = "sentinel-pause"
	// SentinelFailover is `SENTINEL FAILOVER mymaster` sent to the sentinel: a failover
	// without ODOWN or election.
	SentinelFailover SentinelFaultKind = "sentinel-failover"
	// SentinelMoved re-creates a sentinel's pod on a new IP with its config file: the same id,
	// which the others move to the new address (+sentinel-address-switch).
	SentinelMoved SentinelFaultKind = "sentinel-moved"
	// SentinelRenewed re-creates a sentinel's pod on a new IP with a config file rendered
	// anew from a template (no `sentinel myid`): a new id with epochs at 0, monitoring the
	// master at Addr. The others keep its old id as a voter that never answers.
	SentinelRenewed SentinelFaultKind = "sentinel-renewed"
)

// SentinelFault is a fault of one sentinel.
type SentinelFault struct {
	Kind     SentinelFaultKind
	Sentinel int
	Ticks    int
	// Addr is the master a renewed sentinel's template names.
	Addr string
}

// Apply injects a sentinel fault (between two steps). SENTINEL FAILOVER returns the error
// Sentinel would answer.
func (sw *SentinelWorld) Apply(f SentinelFault) error {
	s := sw.sentinels[f.Sentinel]
	now := sw.w.tick
	switch f.Kind {
	case SentinelKill:
		s.running = false
		sw.event(s, "-process", 0, "killed")
	case SentinelStart:
		if !s.running {
			s.running = true
			s.fromConfigFile(now)
			sw.event(s, "+process", 0, "started from its config file")
		}
	case SentinelPause:
		s.pausedUntil = now + int64(f.Ticks)
	case SentinelMoved:
		s.ip, s.running, s.pausedUntil = sw.newSentinelIP(), true, 0
		s.fromConfigFile(now)
		sw.event(s, "+process", 0, "started at %s from its config file", s.ip)
	case SentinelRenewed:
		renewed := sw.newSentinel(s.ordinal, f.Addr)
		renewed.side = s.side
		sw.sentinels[f.Sentinel] = renewed
		sw.event(renewed, "+process", 0, "started at %s from a template, replacing %s", renewed.ip, s.myid)
	case SentinelFailover:
		if !sw.sentinelUp(s) {
			return fmt.Errorf("%s: unreachable", s.myid)
		}
		m := s.m
		if m.failover != failoverNone {
			return fmt.Errorf("INPROG Failover already in progress")
		}
		if sw.selectReplica(s) == nil {
			return fmt.Errorf("NOGOODSLAVE No suitable replica to promote")
		}
		sw.event(s, "+user-failover", s.currentEpoch+1, "SENTINEL FAILOVER %s", sentinelMasterName)
		sw.startFailover(s)
		m.forced = true
	}
	return nil
}

// fromConfigFile is a sentinel process starting again: what sentinelFlushConfig wrote (its
// id, current-epoch, the master's address (the promoted replica's once a failover reached
// the replicas' reconfiguration), config-epoch and leader-epoch, known replicas and
// sentinels) comes back, everything learnt at run time starts over: a failover in progress
// is gone.
func (s *sentinel) fromConfigFile(now int64) {
	old := s.m
	if old == nil {
		return // it monitored nothing, and starts monitoring nothing
	}
	m := &monitored{set: old.set, inst: newInstance(currentMasterAddr(old), now, machine.RolePrimary, 0), configEpoch: old.configEpoch,
		leaderEpoch: old.leaderEpoch, failoverStart: never, failoverChanged: never, odownSince: never}
	for _, r := range old.replicas {
		if r.addr != m.inst.addr {
			m.replicas = append(m.replicas, newInstance(r.addr, now, machine.RoleReplica, sentinelDefaultPriority))
		}
	}
	if old.inst.addr != m.inst.addr {
		m.replicas = append(m.replicas, newInstance(old.inst.addr, now, machine.RoleReplica, sentinelDefaultPriority))
		m.sortReplicas()
	}
	for _, p := range old.sentinels {
		m.sentinels = append(m.sentinels, &peer{runID: p.runID, addr: p.addr, lastHello: now, lastDownReply: now, lastPub: now})
	}
	s.m = m
}
