package sim

import "github.com/valkey-fsm/valkey-operator/machine"

// What a sentinel learns of the data nodes (sentinel.c sentinelSendPeriodicCommands,
// sentinelPingReplyCallback, sentinelRefreshInstanceInfo) and what it concludes:
// SDOWN (sentinelCheckSubjectivelyDown) and ODOWN (sentinelCheckObjectivelyDown).
// A request and its answer travel in the same tick when the link works both ways.

// periodic sends PING, INFO and a hello to the instance, each when its period is due.
func (sw *SentinelWorld) periodic(s *sentinel, inst *instance, isMaster bool) {
	w, now := sw.w, sw.w.tick
	n := w.byIP(inst.addr)
	up := sw.talksToNode(s, n)
	// PING every second (sentinel_ping_period, or down-after when shorter): PONG, LOADING and
	// MASTERDOWN are valid replies; the first unanswered one starts the down clock.
	if up {
		inst.lastAvail, inst.actPing, inst.disconnected = now, never, false
	} else {
		if inst.actPing == never {
			inst.actPing = now
		}
		inst.disconnected = true
		return
	}
	// INFO every 10 s; every second for a replica while its master is ODOWN or failing over,
	// or while it reports its link to its master down.
	period := int64(sentinelInfoPeriod)
	if !isMaster && (s.m.odown || s.m.failover != failoverNone || inst.linkDownTime != 0) {
		period = 1
	}
	if inst.infoRefresh == never || now-inst.infoRefresh >= period {
		sw.refreshInfo(s, inst, n, isMaster)
	}
	if s.m.inst != inst && s.m.replicaAt(inst.addr) != inst {
		return // the INFO switched the master
	}
	if now-inst.lastPub >= sentinelPublishPeriod {
		sw.helloToNode(s, inst, n)
	}
}

// refreshInfo is sentinelRefreshInstanceInfo for the INFO node n answers.
func (sw *SentinelWorld) refreshInfo(s *sentinel, inst *instance, n *node, isMaster bool) {
	w, now, m := sw.w, sw.w.tick, s.m
	if inst.runID != "" && inst.runID != n.runID {
		sw.event(s, "+reboot", 0, "%s at %s", n.name, inst.addr)
	}
	inst.runID = n.runID
	inst.linkDownTime = 0
	if isMaster {
		// The replicas the master lists (slaveN lines) become known replicas (+slave).
		for _, r := range w.shardNodes(n.shard) {
			if r != n && r.exists && r.role == machine.RoleReplica && r.masterIP == n.ip && r.linkUp && r.linkRun == n.runID && m.replicaAt(r.ip) == nil {
				m.replicas = append(m.replicas, newInstance(r.ip, now, machine.RoleReplica, sentinelDefaultPriority))
				m.sortReplicas()
				sw.event(s, "+slave", 0, "%s at %s", r.name, r.ip)
				sw.peersLearnt++
			}
		}
	}
	role := n.role
	if role == machine.RoleReplica {
		if inst.masterHost != n.masterIP {
			inst.masterHost = n.masterIP
			inst.confChangeTime = now
		}
		inst.masterLinkUp = n.linkUp
		if !n.linkUp {
			inst.linkDownTime = sw.linkDownSeconds(n)
		}
		inst.priority = sw.replicaPriority(n)
		inst.offset = n.offset()
	}
	inst.infoRefresh = now
	if role != inst.roleReported {
		inst.roleReportedTime = now
		inst.roleReported = role
		if role == machine.RoleReplica {
			inst.confChangeTime = now
		}
	}
	if isMaster {
		// A master reporting to be a replica: nothing to do, it goes SDOWN in time.
		return
	}
	switch {
	case role == machine.RolePrimary && inst.promoted && m.failover == failoverWaitPromotion:
		// The promoted replica says primary: the failover's epoch becomes the master's config
		// epoch, which the hellos now carry to the other sentinels (+promoted-slave).
		m.configEpoch = m.failoverEpoch
		m.failover, m.failoverChanged = failoverReconfReplicas, now
		sw.event(s, "+promoted-slave", m.failoverEpoch, "%s at %s", n.name, inst.addr)
		sw.forceHello(m)
	case role == machine.RolePrimary:
		// A replica turned primary behind Sentinel's back (an old master back): made a
		// replica again once the master looks sane and the change is 4 hello periods old.
		wait := int64(sentinelPublishPeriod * 4)
		if !inst.promoted && sw.masterLooksSane(m) && noDownFor(inst, now, wait) && now-inst.roleReportedTime > wait {
			if sw.sendReplicaOf(s, inst, m.inst.addr) {
				sw.event(s, "+convert-to-slave", 0, "%s at %s", n.name, inst.addr)
			}
		}
	case inst.masterHost != m.inst.addr:
		// A replica following another primary: re-pointed after failover-timeout.
		if sw.masterLooksSane(m) && noDownFor(inst, now, s.m.set.FailoverTimeout) && now-inst.confChangeTime > s.m.set.FailoverTimeout {
			if sw.sendReplicaOf(s, inst, m.inst.addr) {
				sw.event(s, "+fix-slave-config", 0, "%s at %s", n.name, inst.addr)
			}
		}
	}
	if role == machine.RoleReplica && (inst.reconfSent || inst.reconfInProgress) && m.promoted != nil {
		if inst.reconfSent && inst.masterHost == m.promoted.addr {
			inst.reconfSent, inst.reconfInProgress = false, true
		}
		if inst.reconfInProgress && inst.masterLinkUp {
			inst.reconfInProgress, inst.reconfDone = false, true
			sw.event(s, "+slave-reconf-done", m.failoverEpoch, "%s at %s", n.name, inst.addr)
		}
	}
}

// masterLooksSane is sentinelPrimaryLooksSane.
func (sw *SentinelWorld) masterLooksSane(m *monitored) bool {
	return m.inst.roleReported == machine.RolePrimary && !m.inst.sdown && !m.odown &&
		sw.w.tick-m.inst.infoRefresh < 2*sentinelInfoPeriod
}

// noDownFor is sentinelValkeyInstanceNoDownFor: no SDOWN or ODOWN began in the last period.
func noDownFor(inst *instance, now, period int64) bool {
	return inst.sdownSince == never || now-inst.sdownSince > period
}

// checkSubjectivelyDown: no valid PING reply for down-after, or a master reporting to be a
// replica for down-after plus two INFO periods.
func (sw *SentinelWorld) checkSubjectivelyDown(s *sentinel, inst *instance, isMaster bool) {
	now := sw.w.tick
	var elapsed int64
	if inst.actPing != never {
		elapsed = now - inst.actPing
	}
	down := elapsed > s.m.set.DownAfter ||
		isMaster && inst.roleReported == machine.RoleReplica && now-inst.roleReportedTime > s.m.set.DownAfter+2*sentinelInfoPeriod
	switch {
	case down && !inst.sdown:
		inst.sdown, inst.sdownSince = true, now
		sw.event(s, "+sdown", 0, "%s", inst.addr)
	case !down && inst.sdown:
		inst.sdown = false
		sw.event(s, "-sdown", 0, "%s", inst.addr)
	}
	if isMaster && inst.sdown {
		sw.downSeen[downKey{s.myid, inst.addr}] = now
	}
}

// fresh: p's last answer is not older than five ask periods. sentinel.c forgets an older one
// (its master-down flag and vote) on its next timer, a tenth of a second later; at the
// granularity of a tick it is forgotten at once.
func fresh(p *peer, now int64) bool { return now-p.lastDownReply <= 5*sentinelAskPeriod }

// checkObjectivelyDown: the master is SDOWN here and, counting this sentinel, quorum
// sentinels said it is down in their last answers.
func (sw *SentinelWorld) checkObjectivelyDown(s *sentinel) {
	m := s.m
	odown := false
	if m.inst.sdown {
		votes := 1
		for _, p := range m.sentinels {
			if p.masterDown && fresh(p, sw.w.tick) {
				votes++
			}
		}
		odown = votes >= s.m.set.Quorum
	}
	switch {
	case odown && !m.odown:
		m.odown, m.odownSince = true, sw.w.tick
		sw.event(s, "+odown", 0, "%s", m.inst.addr)
	case !odown && m.odown:
		m.odown = false
		sw.event(s, "-odown", 0, "%s", m.inst.addr)
	}
}

// replicaPriority is the replica-priority n's INFO reports: the configured one when the test
// sets one; otherwise, in the Sentinel topology, 0 while n's replication user is off and the
// default when it is on, as the product's actuators keep it (every action that turns the user
// on or off sets replica-priority with it, and a pod starts with both off): a node that
// restarted, or that the operator fenced or has not opened as a sync source yet, is one the
// operator does not know to hold the data, and Sentinel must not promote it.
func (sw *SentinelWorld) replicaPriority(n *node) int {
	if p, ok := sw.cfg.Priority[n.name]; ok {
		return p
	}
	if sw.w.topo.Mode == machine.ModeSentinel && (n.syncFenced || n.heldBack) {
		return 0
	}
	return sentinelDefaultPriority
}
