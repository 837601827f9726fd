package sim

import "github.com/valkey-fsm/valkey-operator/machine"

// Replication as Valkey does it, reduced to what the properties need. Offsets count writes.
// A replica handshakes with the node at its master IP: it continues (partial resync) when it
// has the master's replication ID at an offset not beyond the master's, or the master's
// previous ID below second_repl_offset; otherwise it takes a full copy. A connection drops
// when either side restarts or the master's data or ID changes (gen), and the replica
// handshakes again. Each tick a linked replica receives everything it misses, unless its link
// lags, and acknowledges, which is what min-replicas-to-write counts.

// pump runs one tick of replication for every replica.
func (w *World) pump() {
	for _, r := range w.nodes {
		w.pumpReplica(r, false)
	}
}

// pumpReplica moves data from r's master to r. forWait is WAIT's immediate round, which a
// lagging link does not make.
func (w *World) pumpReplica(r *node, forWait bool) {
	if !w.responsive(r) || r.role != machine.RoleReplica || r.masterIP == "" || r.detached {
		r.linkUp = false
		return
	}
	m := w.byIP(r.masterIP)
	// down: the master's data and pings reach the replica; up: the replica's
	// acknowledgements reach the master. An established link survives one of them lost (a
	// one-way partition): the replica notices nothing but silence (its link stays "up" until
	// repl-timeout), the master nothing but missing acknowledgements.
	down, up := m != nil && w.reaches(m, r), m != nil && w.reaches(r, m)
	if m == nil || m == r || !down && !up || m.syncFenced {
		r.linkUp = false
		return
	}
	if r.linkUp && (r.linkRun != m.runID || r.linkGen != m.gen) {
		r.linkUp = false
	}
	if !r.linkUp && up && !down {
		w.halfHandshake(r, m)
		return
	}
	if !r.linkUp && (!down || !up) {
		return // a handshake needs both ways
	}
	if r.linkUp && down {
		r.heardAt = w.tick // the master's pings arrive even when the data lags
	}
	if r.lagTicks > 0 && (forWait || w.tick%int64(r.lagTicks+1) != 0) {
		return
	}
	if !r.linkUp {
		// A handshake in flight finishes whatever the replica's password is now (it was
		// accepted before the seal); a new one needs the password.
		if !w.handshakeInFlight(r, m) && !authAccepted(r, m) {
			return // refused: Valkey retries the handshake
		}
		w.handshake(r, m)
	}
	if down {
		for i := len(r.log); i < len(m.log); i++ {
			r.appendWrite(m.log[i])
		}
		r.snapshot = m.snapshot
	}
	if up {
		m.setAck(r.name, w.tick)
	}
}

// handshake establishes r's link to m by partial or full resync.
func (w *World) handshake(r, m *node) {
	off := r.offset()
	partial := m.backlog && ((r.replID == m.replID && off <= m.offset()) ||
		(m.replID2 != "" && r.replID == m.replID2 && off < m.secondOffset))
	if partial {
		if !isPrefix(r.log, m.log) {
			w.violate(ViolationModel, "%s continued from %s by partial resync but its data is not a prefix of %s's", r.name, m.name, m.name)
		}
	} else {
		if m.tainted {
			for _, id := range r.log {
				// A write whose slot another shard serves now moved there with its slot (the
				// simulated MIGRATE copies it and leaves the source's log as it was, where a
				// real one deletes the key): wiping the copy here loses nothing, and a loss on
				// the shard that serves it is that shard's lost-write check.
				if !w.writeOfShard(id, r.shard) {
					continue
				}
				if !m.has.get(id) && w.onLineWrite(r.shard, id) && !w.lostBySentinel(m, id) {
					w.violate(ViolationEmptySource, "%s (restarted without its data) fed %s by full sync, wiping write %d of the shard that %s held", m.name, r.name, id, r.name)
					break
				}
			}
		}
		if !m.backlog {
			// "Replication backlog created, my new replication IDs are …": a new ID, no
			// previous one, the offset kept.
			m.replID, m.replID2, m.secondOffset = w.newReplID(), "", -1
			m.backlog = true
			w.note("%s renamed its history to %s on its first replica's sync", m.name, m.replID)
		}
		r.log = append([]int32(nil), m.log...)
		r.has, r.base = m.has.clone(), m.base
		r.gen++
		w.note("%s full sync from %s (%d writes)", r.name, m.name, len(m.log))
	}
	if r.replID != m.replID || r.replID2 != m.replID2 {
		r.gen++
	}
	r.replID, r.replID2, r.secondOffset = m.replID, m.replID2, m.secondOffset
	r.linkUp, r.linkRun, r.linkGen = true, m.runID, m.gen
	r.handshakeTo, r.handshakeRun = "", ""
	r.backlog = true
	r.heardAt = w.tick
	r.tainted = m.tainted
}

func (m *node) setAck(replica string, tick int64) {
	for i := range m.acks {
		if m.acks[i].replica == replica {
			m.acks[i].tick = tick
			return
		}
	}
	m.acks = append(m.acks, ack{replica, tick})
}

// goodReplicas counts what min-replicas-to-write counts: replicas this process heard from
// within maxLag. The primary forgets a replica at once when it sees the connection close (the
// replica, reachable from it, follows someone else or nothing, or restarted); a replica cut off
// by a partition or a pause it keeps counting until the acknowledgement is maxLag old.
func (w *World) goodReplicas(m *node) int {
	good := 0
	for _, a := range m.acks {
		if a.tick < w.tick-maxLag {
			continue
		}
		r := w.byName(a.replica)
		stillFollows := r != nil && r.exists && r.role == machine.RoleReplica && r.masterIP == m.ip && (r.linkRun == m.runID || w.handshakeInFlight(r, m))
		// A replica whose messages do not reach the primary cannot tell it that it left.
		if stillFollows || (r != nil && !w.reaches(r, m)) {
			good++
		}
	}
	return good
}

// acceptsWrites: a client that reaches n would get a write acknowledged.
func (w *World) acceptsWrites(n *node) bool {
	if !w.responsive(n) || n.role != machine.RolePrimary || n.writesFenced || n.demoteTo != "" {
		return false
	}
	// In cluster mode a primary serves a key only while it claims the key's slot (it may not
	// have heard yet that a newer claim superseded its own: an isolated old primary still does).
	if w.topo.Mode == machine.ModeCluster && n.claim == 0 {
		return false
	}
	return w.topo.MinSyncReplicas == 0 || w.goodReplicas(n) >= w.topo.MinSyncReplicas
}

func isPrefix(a, b []int32) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
