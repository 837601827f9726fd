package sim

import (
	"fmt"
	"sort"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The Sentinel topology in the simulated world: the sentinel model (sentinel*.go) runs inside
// Sim.advance, after the data nodes' tick and before the world's checks, and the operator
// observes each sentinel beside the data nodes. The sentinels run from the world's start
// monitoring nothing, as the topology's sentinel pods start from a configuration that names
// no group; the machine tells them what to monitor (machine.SentinelMonitor, applied here as
// SENTINEL MONITOR and SET), and from then on they learn the replicas from the master's INFO
// and each other from hellos, as sentinel.c does.

// startOrTickSentinels starts the sentinels at the world's first tick, then runs one tick of
// theirs per world tick.
func (s *Sim) startOrTickSentinels() {
	w := s.w
	if w.topo.Sentinel == nil {
		return
	}
	if w.sentinels != nil {
		w.sentinels.tick()
		return
	}
	w.sentinels = newSentinelWorld(s, *w.topo.Sentinel, nil, "")
	w.note("sentinels: %d start, monitoring nothing", w.topo.Sentinel.Sentinels)
}

// settings are the machine's form of the sentinels' settings (ticks are seconds).
func (c SentinelConfig) settings() machine.SentinelSettings {
	return machine.SentinelSettings{Quorum: c.Quorum, DownAfterMillis: c.DownAfter * 1000, FailoverTimeoutMillis: c.FailoverTimeout * 1000, ParallelSyncs: c.ParallelSyncs}
}

// withSettings is c with the group's settings a SENTINEL MONITOR and SET give (times rounded
// down to ticks, at least one).
func (c SentinelConfig) withSettings(s machine.SentinelSettings) SentinelConfig {
	c.Quorum, c.ParallelSyncs = s.Quorum, s.ParallelSyncs
	c.DownAfter, c.FailoverTimeout = max(1, s.DownAfterMillis/1000), max(1, s.FailoverTimeoutMillis/1000)
	return c
}

// sentinelMonitor carries out a SentinelMonitor action as the real actuator does: through the
// operator's connection to the sentinel, only on the process it was decided for; a sentinel
// that monitors nothing starts to (SENTINEL MONITOR: the master at the address, config epoch
// 0, nothing else known yet), and every one takes the settings (SENTINEL SET).
func (w *World) sentinelMonitor(a machine.SentinelMonitor) error {
	sw := w.sentinels
	s, err := w.sentinelFor(a.SentinelTarget)
	if err != nil {
		return err
	}
	if s.m == nil {
		if w.byIP(a.PrimaryIP) == nil {
			return fmt.Errorf("%s: SENTINEL MONITOR %s: no node answers at %s", a.Sentinel, sentinelMasterName, a.PrimaryIP)
		}
		s.m = sw.newMonitored(a.PrimaryIP, sw.cfg.withSettings(a.Settings))
		sw.event(s, "+monitor", 0, "master %s %s quorum %d", sentinelMasterName, a.PrimaryIP, a.Settings.Quorum)
		return nil
	}
	s.m.set = s.m.set.withSettings(a.Settings)
	sw.event(s, "+set", 0, "%s quorum %d down-after %d failover-timeout %d parallel-syncs %d", sentinelMasterName, s.m.set.Quorum, s.m.set.DownAfter, s.m.set.FailoverTimeout, s.m.set.ParallelSyncs)
	return nil
}

// sentinelRemove carries out a SentinelRemove (SENTINEL REMOVE): the sentinel forgets the
// group, its vote in it with it (the vote is the group's, sentinel.c's leader_epoch); its
// current epoch stays.
func (w *World) sentinelRemove(a machine.SentinelRemove) error {
	s, err := w.sentinelFor(a.SentinelTarget)
	if err != nil {
		return err
	}
	if s.m != nil {
		s.m = nil
		w.sentinels.event(s, "-monitor", 0, "master %s", sentinelMasterName)
	}
	return nil
}

// sentinelReset carries out a SentinelReset (SENTINEL RESET of the group) as sentinel.c's
// sentinelResetPrimary does: the known replicas and sentinels are forgotten (found again from
// the master's INFO and the others' hellos), the master's flags, a failover in progress and the
// leader voted for are cleared, and a new failover may start at once; the master's address,
// the settings, the config epoch and the epoch of the vote stay.
func (w *World) sentinelReset(a machine.SentinelReset) error {
	s, err := w.sentinelFor(a.SentinelTarget)
	if err != nil {
		return err
	}
	old := s.m
	if old == nil {
		return nil
	}
	s.m = &monitored{set: old.set, inst: newInstance(old.inst.addr, w.tick, machine.RolePrimary, 0), configEpoch: old.configEpoch,
		leaderEpoch: old.leaderEpoch, failoverStart: never, failoverChanged: never, odownSince: never}
	w.sentinels.event(s, "+reset-master", 0, "master %s %s", sentinelMasterName, old.inst.addr)
	return nil
}

// rollSentinel carries out a RollSentinel as the real actuator does: the pod is deleted
// through the API server, which reaches it whatever the network between the operator and the
// sentinel, but a sentinel decided for by its id (it answered) is first asked that id, and
// a pod already at the revision is left alone. The sentinel stops at once (SIGTERM: Sentinel
// keeps nothing its file does not hold); its pod is made again sentinelRemakeTicks later at the
// StatefulSet's revision, on a new address, from its file (remakeRolled).
func (w *World) rollSentinel(a machine.RollSentinel) error {
	sw := w.sentinels
	s := w.sentinelNamed(a.Sentinel)
	switch {
	case s == nil || s.restartAt > 0 || s.revision == a.Revision:
		return nil // no pod to delete, or it is on its way out, or it runs the revision already
	case a.ID != "":
		if _, err := w.sentinelFor(a.SentinelTarget); err != nil {
			return err
		}
	case s.ip != a.IP:
		return fmt.Errorf("%s runs at %s, action was for %s", a.Sentinel, s.ip, a.IP)
	}
	if s.running {
		s.running = false
		sw.event(s, "-process", 0, "stopped: its pod is deleted to run revision %s", a.Revision)
	}
	s.restartAt = w.tick + sentinelRemakeTicks
	return nil
}

// sentinelRemakeTicks is how long a deleted sentinel pod takes to run again: terminating for
// a tick, then gone until the StatefulSet has made it again and its process started.
const sentinelRemakeTicks = 3

// sentinelReadyTicks is how long a sentinel pod made again takes to be ready after its process
// started (a readiness probe period).
const sentinelReadyTicks = 2

// remakeRolled starts the sentinels whose pods the StatefulSet makes again now.
func (sw *SentinelWorld) remakeRolled() {
	for i, s := range sw.sentinels {
		if s.restartAt > 0 && sw.w.tick >= s.restartAt {
			s.restartAt, s.revision, s.readyAt = 0, sw.w.objects.SentinelRevision, sw.w.tick+sentinelReadyTicks
			_ = sw.Apply(SentinelFault{Kind: SentinelMoved, Sentinel: i})
		}
	}
}

// sentinelFor finds the sentinel an action is aimed at, through the operator's connection to
// it, and checks it is the process (id) the action was decided for.
func (w *World) sentinelFor(t machine.SentinelTarget) (*sentinel, error) {
	s := w.sentinelNamed(t.Sentinel)
	if s == nil || !w.operatorTalksToSentinel(s) {
		return nil, fmt.Errorf("%s: %w", t.Sentinel, errUnreachable)
	}
	if s.myid != t.ID || s.ip != t.IP {
		return nil, fmt.Errorf("%s runs %s at %s, action was for %s at %s", t.Sentinel, s.myid, s.ip, t.ID, t.IP)
	}
	return s, nil
}

// sentinelNamed is the sentinel whose pod is named name (nil: none).
func (w *World) sentinelNamed(name string) *sentinel {
	if sw := w.sentinels; sw != nil {
		for _, c := range sw.sentinels {
			if sentinelName(c.ordinal) == name {
				return c
			}
		}
	}
	return nil
}

// operatorTalksToSentinel reports whether the operator and sentinel s reach each other.
func (w *World) operatorTalksToSentinel(s *sentinel) bool {
	sw := w.sentinels
	return sw.sentinelUp(s) && sw.sides(w.operatorSide, s.side) && sw.sides(s.side, w.operatorSide)
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
	case FaultRenewSentinel:
		_ = sw.Apply(SentinelFault{Kind: SentinelRenewed, Sentinel: f.Sentinel})
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
			if !s.running && s.restartAt == 0 { // a deleted pod is made again by remakeRolled
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
		o := machine.Sentinel{Name: sentinelName(s.ordinal), Revision: s.revision, PodReady: s.running && w.tick >= s.readyAt}
		if s.restartAt > 0 {
			// Its pod is terminating for a tick, then gone until it is made again.
			o.Terminating = w.tick < s.restartAt-sentinelRemakeTicks+1
			if !o.Terminating {
				o.Revision = ""
			}
		}
		if w.operatorTalksToSentinel(s) {
			o.Reachable, o.IP, o.ID = true, s.ip, s.myid
			if m := s.m; m != nil {
				o.Monitoring, o.Settings = true, m.set.settings()
				o.PrimaryIP, o.ConfigEpoch = currentMasterAddr(m), m.configEpoch
				o.FailingOver, o.PrimaryDown = m.failover != failoverNone, m.odown
				o.Peers = len(m.sentinels)
				for _, r := range m.replicas {
					o.Replicas = append(o.Replicas, machine.SentinelReplica{IP: r.addr, Priority: r.priority, ReportsPrimary: r.roleReported == machine.RolePrimary})
				}
				sort.Slice(o.Replicas, func(i, j int) bool { return o.Replicas[i].IP < o.Replicas[j].IP })
			}
		}
		out = append(out, o)
	}
	return out
}

// sentinelsLearningReplicas reports whether a sentinel that monitors the group does not list
// yet a replica its master's INFO lists: it learns it at its next INFO of the master (every
// 10 ticks), so what the sentinels know is still changing.
func (w *World) sentinelsLearningReplicas() bool {
	if w.sentinels == nil {
		return false
	}
	for _, s := range w.sentinels.sentinels {
		if s.m == nil || !s.running {
			continue
		}
		master := w.byIP(s.m.inst.addr)
		if master == nil || !master.running {
			continue
		}
		for _, r := range w.shardNodes(master.shard) {
			if r != master && r.exists && r.role == machine.RoleReplica && r.masterIP == master.ip && r.linkUp && r.linkRun == master.runID && s.m.replicaAt(r.ip) == nil {
				return true
			}
		}
	}
	return false
}

// sentinelPeersLearnt counts the sentinels' +sentinel and +slave events so far (0 without
// sentinels).
func (w *World) sentinelPeersLearnt() int {
	if w.sentinels == nil {
		return 0
	}
	return w.sentinels.peersLearnt
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
// min-replicas-to-write (sentinelOverlap, from this tick). None of this holds for the
// operator's hand-over (byOperator): what its pick lacks, and a primary beside it, are the
// operator's.
func (w *World) sentinelPromoted(n *node, byOperator bool) {
	if byOperator {
		return
	}
	if !n.writesFenced {
		if w.sentinelPicked == nil {
			w.sentinelPicked = map[string]int{}
		}
		w.sentinelPicked[n.runID] = len(w.writes)
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

// lostBySentinel reports whether write id, missing on m, is lost by Sentinel's design when m
// feeds a replica: m is a node Sentinel promoted while the process that acknowledged the write
// was a primary, and the write came at or after the promotion ("last failover wins"), or m is
// a node Sentinel promoted open (its writes not fenced) that lacked the write then (Sentinel
// picked a replica behind: cut off, say, while the primary took it). The replica Sentinel
// re-points at m drops it as Sentinel's rules say; what the operator adds to such a loss is
// still checked where clients write (checkWorld).
func (w *World) lostBySentinel(m *node, id int32) bool {
	if int(id) >= len(w.writes) {
		return false
	}
	if made, ok := w.sentinelPicked[m.runID]; ok && int(id) < made {
		return true
	}
	_, lost := w.sentinelExcuses(m, &w.writes[id])
	return lost
}

// sentinelExcuses reports whether n, taking writes without the WAIT-acknowledged write wr, is
// Sentinel's design rather than a loss: n is a primary Sentinel replaced, still taking writes
// beside one it promoted (or one a person handed that role to), which holds wr and is still a
// primary (the replaced one's writes are the ones to go). lostBySentinel reports whether the
// write is lost by it: n is the promoted node and wr was acknowledged by the primary it
// replaced after the promotion.
func (w *World) sentinelExcuses(n *node, wr *writeRecord) (excused, lostBySentinel bool) {
	if at, ok := w.sentinelOverlap[[2]string{n.runID, wr.runID}]; ok && wr.tick >= at {
		return false, true
	}
	for _, m := range w.nodes {
		if _, ok := w.sentinelOverlap[[2]string{m.runID, n.runID}]; ok && m.exists && m.running && m.role == machine.RolePrimary && m.has.get(wr.id) {
			return true, false
		}
	}
	// The process that acknowledged wr was Sentinel's pick over n and is gone since (a
	// restart, a re-created pod): the split is still Sentinel's while a node that runs holds
	// wr, which the sentinels' next failover may pick over n (found by the exploration, seed
	// 16618: the pick's pod re-created at another address, its replica holding the write). n
	// is no survivor yet; once no running node holds wr it is lost, and that is checked.
	if _, ok := w.sentinelOverlap[[2]string{wr.runID, n.runID}]; ok {
		for _, m := range w.nodes {
			if m != n && m.shard == n.shard && m.exists && m.running && m.has.get(wr.id) {
				return true, false
			}
		}
	}
	return false, false
}

// sentinelHandedOver passes the overlaps Sentinel's design allows from to to, after a
// person's lossless FAILOVER TO from from to to: the split Sentinel left (a replaced primary
// still taking writes beside its pick) is the same split with to in from's place.
func (w *World) sentinelHandedOver(from, to *node) {
	for k, at := range w.sentinelOverlap {
		switch {
		case k[0] == from.runID:
			w.sentinelOverlap[[2]string{to.runID, k[1]}] = at
		case k[1] == from.runID:
			w.sentinelOverlap[[2]string{k[0], to.runID}] = at
		}
	}
}

// scaleSentinels carries out the sentinel count of an EnsureObjects as the StatefulSet
// controller does: a sentinel added starts on a new claim (a new id and address, monitoring
// nothing); one removed goes with its claim, the highest ordinal first, and the others keep
// it among their peers until they are reset. (Nothing before the sentinels start, nor for 0:
// the other modes.)
func (w *World) scaleSentinels(n int) {
	sw := w.sentinels
	if sw == nil || n <= 0 || n == len(sw.sentinels) {
		return
	}
	for len(sw.sentinels) < n {
		s := sw.newSentinel(len(sw.sentinels), "")
		s.added = true
		sw.sentinels = append(sw.sentinels, s)
		w.note("%s starts (%s at %s), monitoring nothing", sentinelName(s.ordinal), s.myid, s.ip)
	}
	for len(sw.sentinels) > n {
		s := sw.sentinels[len(sw.sentinels)-1]
		sw.sentinels = sw.sentinels[:len(sw.sentinels)-1]
		w.note("%s (%s) removed with its claim", sentinelName(s.ordinal), s.myid)
	}
}
