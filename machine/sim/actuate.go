package sim

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The simulated actuators. Each applies one machine action to the world the way the real
// actuator would: through the operator's connection to the node (so it fails when the
// operator cannot reach it), and only to the process it was decided for (run id).

var errUnreachable = errors.New("node unreachable")

// aimedAt finds the process an aimed action is aimed at (target).
func (w *World) aimedAt(t machine.Target) (*node, error) { return w.target(t.Node, t.RunID) }

// target finds the node an action is aimed at and checks it is the same process.
func (w *World) target(name, runID string) (*node, error) {
	n := w.byName(name)
	if n == nil || !w.operatorTalks(n) {
		return nil, fmt.Errorf("%s: %w", name, errUnreachable)
	}
	if runID != "" && n.runID != runID {
		return nil, fmt.Errorf("%s runs %s, action was for %s", name, n.runID, runID)
	}
	return n, nil
}

// Apply carries out one action: the simulated side of machine.Actuator, checked against the
// real actuators by the conformance table (machine/conformance).
func (w *World) Apply(_ context.Context, a machine.Action) error {
	// n is the process an aimed action is aimed at, checked once for every such action.
	var n *node
	if t, ok := a.(machine.Aimed); ok {
		var err error
		if n, err = w.aimedAt(t.Aim()); err != nil {
			return err
		}
	}
	switch a := a.(type) {
	case machine.EnsureObjects:
		// The operator's last checks before the objects change (machine.CheckScaleDown), with
		// what the simulated world tells right now. (Shrinking first, the sabotage, has none.)
		if w.sabotage != SabotageShrinkFirst {
			if _, err := machine.CheckScaleDown(w.scaleDown(a)); err != nil {
				return err
			}
		}
		w.objects = a.Objects()
		w.scaleSentinels(a.Sentinels)
		return nil
	case machine.SentinelMonitor:
		return w.sentinelMonitor(a)
	case machine.SentinelRemove:
		return w.sentinelRemove(a)
	case machine.SentinelReset:
		return w.sentinelReset(a)
	case machine.RollSentinel:
		return w.rollSentinel(a)
	case machine.SentinelHandOver:
		return w.sentinelHandOver(a)
	case machine.HoldBack:
		return w.holdBack(n)
	case machine.Promote:
		// In cluster mode a replica takes its primary's slots over (CLUSTER FAILOVER TAKEOVER:
		// a new epoch); a node that is a primary already gets a new epoch if it has heard of a
		// higher one than its own, and is opened to replicas.
		if w.topo.Mode == machine.ModeCluster && n.role == machine.RoleReplica {
			if _, claim, _ := w.claimOf(n.masterID); claim > 0 {
				w.giveClaim(n)
			}
		} else if w.topo.Mode == machine.ModeCluster {
			w.bumpEpoch(n) // a primary elected in place (CLUSTER BUMPEPOCH)
		}
		w.promote(n)
		n.heldBack = false
		n.writesFenced, n.syncFenced = true, false
		return nil
	case machine.Seal, machine.Unseal:
		return w.applySeal(n, a)
	case machine.Detach:
		n.handshakeTo, n.handshakeRun = "", "" // the handshake's connection is closed
		if n.role == machine.RoleReplica && w.topo.Mode == machine.ModeCluster {
			// Its primary stays what nodes.conf says; the replication password it is given
			// instead is refused, and its link is closed.
			n.detached, n.linkUp = true, false
		} else if n.role == machine.RoleReplica {
			n.masterIP, n.linkUp = "", false
		}
		return nil
	case machine.Fence:
		n.heldBack = false
		n.writesFenced, n.syncFenced = true, true
		n.gen++ // the operator kills the replication connections it had
		return nil
	case machine.CloseWrites:
		n.writesFenced = true
		return nil
	case machine.OpenWrites:
		// In the Sentinel topology a replica is opened too, as a sync source Sentinel may
		// promote (client writes stay refused: a replica is read-only).
		if n.role != machine.RolePrimary && w.topo.Mode != machine.ModeSentinel {
			return fmt.Errorf("%s is not a primary", n.name)
		}
		n.heldBack = false
		n.writesFenced, n.syncFenced = false, false
		return nil
	case machine.ReplicaOf:
		n.seal = machine.SealRecord{} // the replication password is set again
		if w.topo.Mode == machine.ModeCluster {
			return w.replicate(n, a.PrimaryIP, a.PrimaryRunID)
		}
		// As the real actuator: a replica serves reads (client user on) and is no sync source.
		n.heldBack = false
		n.writesFenced, n.syncFenced = false, true
		if n.role == machine.RoleReplica && n.masterIP == a.PrimaryIP {
			return nil
		}
		n.role = machine.RoleReplica
		n.masterIP, n.linkUp = a.PrimaryIP, false
		n.gen++ // its own replicas are disconnected and must handshake again
		return nil
	case machine.HandOver:
		return w.handOver(a)
	case machine.RollPod:
		n := w.byName(a.Node)
		if n == nil || !n.exists {
			return fmt.Errorf("%s: no pod", a.Node)
		}
		w.deletePod(n, w.topo.Persistence)
		return nil
	case machine.AssignSlots:
		// As the real actuator: a slot another node serves in this node's view is refused.
		if other := w.ownerInView(n, a.Slots); other != "" {
			return fmt.Errorf("assign-slots %s: slots served by %s in its view", n.name, other)
		}
		if n.claim == 0 {
			w.giveClaim(n)
		}
		for _, r := range a.Slots {
			w.moveSlots(r, n.shard)
		}
		return nil
	case machine.TakeSlotsOver:
		if _, err := w.target(a.From, a.FromRunID); err != nil {
			return err
		}
		if n.role != machine.RolePrimary {
			return fmt.Errorf("take-slots-over %s: not a primary", n.name)
		}
		// SETSLOT NODE to itself for each slot (the slots are its shard's), then BUMPEPOCH: an
		// epoch above every one it has heard of. The old owner drops the slots when it hears
		// the newer claim (gossip), if this one is newer than its own.
		w.giveClaim(n)
		return nil
	case machine.AddNode:
		w.meet(n)
		return nil
	case machine.RemoveNode:
		// As the real actuator: every other node forgets it, then it resets itself (CLUSTER
		// RESET SOFT: it forgets every other node and keeps its ID), which turns a replica into
		// an empty primary that belongs to no cluster and empties a primary whose keys all moved
		// away; one still holding keys refuses.
		if err := w.forget(n.id, n.name, true); err != nil {
			return err
		}
		if n.role == machine.RolePrimary && w.keysHeld(n) > 0 {
			return fmt.Errorf("%s: CLUSTER RESET can't be called with master nodes containing keys", n.name)
		}
		w.wiped(n, "remove-node reset")
		n.log, n.has, n.base, n.backlog = nil, nil, 0, false
		n.replID, n.replID2, n.secondOffset = w.newReplID(), "", -1
		n.role = machine.RolePrimary
		n.masterIP, n.linkUp = "", false
		n.claim, n.masterID, n.peersAt, n.detached, n.lostTo = 0, "", nil, false, ""
		n.gen++
		w.unclaimed(n.shard)
		return nil
	case machine.ForgetNode:
		return w.forget(a.ID, "", false)
	case machine.MigrateSlots:
		return w.migrate(a)
	case machine.RestoreSnapshot:
		return w.restore(n, a)
	case machine.AddPasswords, machine.PublishPasswords, machine.SwitchMasterAuth, machine.RetirePasswords:
		return w.applyPasswords(a)
	case machine.ReloadCertificate:
		// As the real actuator: a node that serves no TLS has no certificate files to load
		// (its tls-cert-file is empty), and the reload is refused.
		if n.served == "" {
			return fmt.Errorf("%s serves no TLS (no tls-cert-file)", n.name)
		}
		n.served = w.certFile // what the mounted files hold, whatever the action expected
		return nil
	case machine.ExpandVolumes:
		for _, name := range a.Nodes {
			if n := w.byName(name); n != nil && n.volumeBytes < a.Bytes {
				n.volumeBytes = a.Bytes
			}
		}
		return nil
	}
	return fmt.Errorf("unknown action %T", a)
}

// promote turns n into a primary of a new history continuing its current one
// (REPLICAOF NO ONE). A primary stays as it is.
func (w *World) promote(n *node) {
	if n.role == machine.RolePrimary {
		return
	}
	n.replID2 = n.replID
	n.secondOffset = n.offset() + 1
	n.replID = w.newReplID()
	n.role = machine.RolePrimary
	n.masterIP, n.linkUp = "", false
	n.gen++
}

// loadRefused is the error of a load refused for what the snapshot holds (as
// backup.Refused): the operator does not try it again.
type loadRefused struct{ why string }

func (e loadRefused) Error() string { return e.why }

// refuseLoad is a load of a spoiled snapshot into n: refused, after what the real loads do
// to the node before they find out.
func (w *World) refuseLoad(n *node, snap *snapshot) error {
	if snap.spoiled == 2 {
		if w.topo.Mode == machine.ModeCluster {
			// LoadByRestore takes a new replication ID, then empties the node.
			n.log, n.has, n.base, n.backlog = nil, nil, 0, true
			if w.sabotage != SabotageEmptyKeepsID {
				n.replID, n.replID2, n.secondOffset = w.newReplID(), "", -1
			}
		} else {
			// Load's REPLICAOF, its sync cut off before the end, then REPLICAOF NO ONE: the
			// node keeps its data under a new ID, the old one as its previous.
			n.replID2, n.secondOffset, n.replID = n.replID, n.offset()+1, w.newReplID()
		}
		n.gen++
	}
	return loadRefused{why: fmt.Sprintf("RDB check failed: the files of %s are not the ones checked", snap.id)}
}

// handOver is FAILOVER TO: the target must be a linked replica the primary reaches; it is
// brought up to date, takes over with writes as they were, the old primary follows it.
func (w *World) handOver(a machine.HandOver) error {
	from, to, err := w.handOverEnds(a)
	if err != nil {
		return err
	}
	return w.failoverTo(from, to, true)
}

// handOverEnds finds a hand-over's primary and target, each the process it was decided for.
func (w *World) handOverEnds(a machine.HandOver) (from, to *node, err error) {
	if from, err = w.target(a.From, a.FromRunID); err != nil {
		return nil, nil, err
	}
	if to, err = w.target(a.To, a.ToRunID); err != nil {
		return nil, nil, err
	}
	return from, to, nil
}

// failoverTo is FAILOVER TO as Valkey runs it on from: the target must be a linked replica
// the primary reaches; it is brought up to date, takes over with writes as they were, and
// the old primary follows it. byOperator is the operator's hand-over, whose actuator opens the
// target to replicas and leaves client writes as the primary had them. A person's FAILOVER TO
// (a fault) opens the target to replicas too, or the old primary could not follow it (FAILOVER
// TO touches no ACL user, and a replica's replication user is off until the operator opens
// it), and leaves every client user as it was: a replica serving reads takes writes as a
// primary at once, a closed one stays closed.
func (w *World) failoverTo(from, to *node, byOperator bool) error {
	if !w.responsive(from) || from.role != machine.RolePrimary || to.role != machine.RoleReplica || to.masterIP != from.ip || !to.linkUp ||
		to.linkRun != from.runID || to.lagTicks > 0 || !w.talk(from, to) {
		return fmt.Errorf("FAILOVER TO %s: not a caught-up replica of %s", to.name, from.name)
	}
	for i := len(to.log); i < len(from.log); i++ {
		to.appendWrite(from.log[i])
	}
	fenced := from.writesFenced
	if w.topo.Mode == machine.ModeCluster {
		// CLUSTER FAILOVER: the replica takes the slots over with a new epoch, the old primary
		// follows it.
		w.giveClaim(to)
		from.claim, from.masterID, from.lostTo, from.lostAt = 0, to.id, to.id, w.tick
		from.followedAt = w.tick
	}
	w.promote(to)
	if from.shard < len(w.holders) && w.holders[from.shard] == (holder{from.name, from.runID}) {
		w.holders[from.shard] = holder{to.name, to.runID}
	}
	if byOperator {
		to.writesFenced = fenced
	}
	to.syncFenced, to.heldBack = false, false
	if w.topo.Mode != machine.ModeCluster {
		// FAILOVER TO finishes on the old primary a moment after the target promoted itself:
		// an observation in between sees two primaries, the target on the next history.
		from.demoteTo, from.demoteAt = to.ip, w.tick+handOverTicks
		w.note("%s handed over to %s (the target promoted; %s follows it at tick %d)", from.name, to.name, from.name, from.demoteAt)
		return nil
	}
	w.demote(from, to.ip)
	w.note("%s handed over to %s", from.name, to.name)
	return nil
}

// handBack is a person handing the role back to from, the primary that just handed it to to
// (FAILOVER TO on to), between two of the operator's surveys: from finishes its hand-over and
// follows to, catches up with it, and takes the role back under a history promoted from to's,
// the same process primary again. When from cannot catch up (no link to to), it stays a
// replica of to.
func (w *World) handBack(from, to *node) {
	if from.demoteTo != "" {
		w.demote(from, from.demoteTo)
	}
	w.pumpReplica(from, false)
	if err := w.failoverTo(to, from, false); err != nil {
		w.note("manual FAILOVER TO back: %v", err)
		return
	}
	w.note("manual FAILOVER TO back: %s handed the role back to %s", to.name, from.name)
}

// handOverTicks is how long an old primary takes to follow the target of its FAILOVER TO:
// long enough for an operator turn to see both as primaries.
const handOverTicks = 2

// demote makes n a replica of the node at ip.
func (w *World) demote(n *node, ip string) {
	n.role = machine.RoleReplica
	n.masterIP, n.linkUp = ip, false
	n.demoteTo, n.demoteAt = "", 0
	n.gen++
}

// finishHandOvers completes the FAILOVER TOs whose time has come on processes still running.
func (w *World) finishHandOvers() {
	for _, n := range w.nodes {
		if n.demoteTo != "" && w.tick >= n.demoteAt && w.responsive(n) {
			w.demote(n, n.demoteTo)
			w.note("%s follows the target of its hand-over (%s)", n.name, n.masterIP)
		}
	}
}

// moveSlots makes shard `to` the owner of r (taking it from whoever owned parts of it).
func (w *World) moveSlots(r machine.SlotRange, to int) {
	for len(w.slots) <= to {
		w.slots = append(w.slots, nil)
	}
	for s := range w.slots {
		w.slots[s] = subtractRange(w.slots[s], r)
	}
	for s := range w.freed {
		w.freed[s] = subtractRange(w.freed[s], r)
	}
	w.slots[to] = mergeRanges(append(w.slots[to], r))
	w.slotsVersion++
}

// mergeRanges sorts ranges and joins the adjacent ones, as CLUSTER SHARDS reports them.
func mergeRanges(ranges []machine.SlotRange) []machine.SlotRange {
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].Start < ranges[j].Start })
	var out []machine.SlotRange
	for _, r := range ranges {
		if n := len(out); n > 0 && out[n-1].End+1 >= r.Start {
			out[n-1].End = max(out[n-1].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}

func subtractRange(ranges []machine.SlotRange, cut machine.SlotRange) []machine.SlotRange {
	var out []machine.SlotRange
	for _, r := range ranges {
		if r.End < cut.Start || r.Start > cut.End {
			out = append(out, r)
			continue
		}
		if r.Start < cut.Start {
			out = append(out, machine.SlotRange{Start: r.Start, End: cut.Start - 1})
		}
		if r.End > cut.End {
			out = append(out, machine.SlotRange{Start: cut.End + 1, End: r.End})
		}
	}
	return out
}

// migrate moves a slot range and its keys between two shards' primaries (classic MIGRATE).
// In this model the move is atomic: it happens in one step or not at all.
func (w *World) migrate(a machine.MigrateSlots) error {
	from, err := w.target(a.FromNode, a.FromRunID)
	if err != nil {
		return err
	}
	to, err := w.target(a.ToNode, a.ToRunID)
	if err != nil {
		return err
	}
	if from.role != machine.RolePrimary || to.role != machine.RolePrimary || !w.talk(from, to) {
		return fmt.Errorf("migrate %s -> %s: both must be reachable primaries", from.name, to.name)
	}
	var moving []int32
	for _, id := range from.log {
		if slot := slotOf(w.writes[id].key); slot >= a.Slots.Start && slot <= a.Slots.End && !to.has.get(id) {
			moving = append(moving, id)
		}
	}
	// MIGRATE writes the keys into the target with RESTORE, a write command: with
	// min-replicas-to-write the target refuses it (NOREPLICAS) unless enough replicas follow.
	// Without keys to move no MIGRATE is sent.
	if len(moving) > 0 && w.topo.MinSyncReplicas > 0 && w.goodReplicas(to) < w.topo.MinSyncReplicas {
		return fmt.Errorf("migrate %s -> %s: NOREPLICAS", from.name, to.name)
	}
	for _, id := range moving {
		to.appendWrite(id)
	}
	if to.claim == 0 {
		w.giveClaim(to) // SETSLOT NODE bumps the target's epoch
	}
	w.moveSlots(a.Slots, to.shard)
	return nil
}

// restore loads a snapshot's part for a shard into a node: its data is replaced, it starts a
// new history and serves replicas; writes are fenced. Acknowledged writes of the shard that
// are not in the snapshot are discarded on purpose.
func (w *World) restore(n *node, a machine.RestoreSnapshot) error {
	var snap *snapshot
	for i := range w.snapshots {
		if w.snapshots[i].id == a.Snapshot {
			snap = &w.snapshots[i]
		}
	}
	if snap == nil || a.Shard >= len(snap.logs) {
		return fmt.Errorf("snapshot %s has no shard %d", a.Snapshot, a.Shard)
	}
	if snap.spoiled != 0 {
		return w.refuseLoad(n, snap)
	}
	n.log = append([]int32(nil), snap.logs[a.Shard]...)
	// The real loads leave the node with a replication backlog under its new ID (Load: it was a
	// replica of the operator's listener; LoadByRestore creates one), so its first replica
	// does not rename its history.
	n.has, n.base, n.backlog = nil, 0, true
	for _, id := range n.log {
		n.has.set(id)
	}
	n.replID, n.replID2, n.secondOffset = w.newReplID(), "", -1
	if w.topo.Mode == machine.ModeCluster && n.claim == 0 {
		w.giveClaim(n)
	}
	n.role = machine.RolePrimary
	n.masterIP, n.linkUp = "", false
	n.writesFenced, n.syncFenced = true, false
	n.snapshot = a.RequestID
	n.tainted = false
	n.gen++
	w.setHolder(a.Shard, n)
	for i := range w.writes {
		wr := &w.writes[i]
		if !wr.exempt && w.shardOfKey(wr.key) == a.Shard && !n.has.get(wr.id) {
			wr.exempt = true
		}
	}
	return nil
}

// meet is add-node: the node meets every pod it does not know at its current address; the
// handshake completes with those it can talk to.
func (w *World) meet(n *node) {
	for _, m := range w.nodes {
		if m == n || !m.exists || m.id == "" || !w.talk(n, m) {
			continue
		}
		if n.peersAt == nil {
			n.peersAt = map[string]string{}
		}
		n.peersAt[m.id] = m.ip
	}
}

// replicate is the cluster-mode ReplicaOf, as the real actuator does it (CLUSTER REPLICATE):
// the primary must answer with its ID; a node that follows it already only gets its
// replication password and client user back; a primary that serves slots is refused; one
// without slots that still holds keys is emptied first (the machine elected the most complete
// copy before); the node meets the primary if it does not know it at its address.
func (w *World) replicate(n *node, primaryIP, primaryRunID string) error {
	m := w.byIP(primaryIP)
	if m == nil || m == n || !w.operatorTalks(m) {
		return fmt.Errorf("CLUSTER MYID of the primary %s: %w", primaryIP, errUnreachable)
	}
	if primaryRunID != "" && m.runID != primaryRunID {
		return fmt.Errorf("primary: %s runs %s, action was for %s", m.name, m.runID, primaryRunID)
	}
	n.syncFenced, n.detached = true, false
	if n.role == machine.RoleReplica && n.masterID == m.id {
		n.writesFenced = false
		return nil
	}
	if n.role == machine.RolePrimary && w.serves(n) {
		return fmt.Errorf("%s serves slots: CLUSTER REPLICATE refused", n.name)
	}
	if n.role == machine.RolePrimary && len(n.log) > 0 {
		w.note("%s, a primary without slots, is emptied (%d writes) before it replicates", n.name, len(n.log))
		n.log, n.has, n.base, n.backlog = nil, nil, 0, false
		n.disk, n.pending = nil, nil
		n.replID, n.replID2, n.secondOffset = w.newReplID(), "", -1
		n.gen++
	}
	if n.peersAt[m.id] != m.ip {
		if !w.talk(n, m) {
			return fmt.Errorf("%s does not know the primary %s yet: the cluster bus handshake has not completed", n.name, primaryIP)
		}
		if n.peersAt == nil {
			n.peersAt = map[string]string{}
		}
		n.peersAt[m.id] = m.ip
	}
	n.role = machine.RoleReplica
	n.masterID, n.masterIP, n.linkUp, n.lostTo, n.followedAt = m.id, m.ip, false, "", w.tick
	n.shardID = m.shardID
	n.writesFenced = false
	n.gen++
	return nil
}

// scaleDown is what the scale-down checks see of the simulated world, built as the operator
// builds it (machine.ScaleDownOf): every shard the objects run, and the nodes as a survey
// right now tells them.
func (w *World) scaleDown(a machine.EnsureObjects) machine.ScaleDown {
	running := map[int]int{}
	for sh := 0; sh < w.objects.Shards; sh++ {
		running[sh] = w.objects.Replicas + 1
	}
	s := machine.ScaleDownOf(a, w.topo.Mode, running, w.observe(map[string]int{}).Nodes)
	s.Alive = func(k machine.Proc) error {
		n := w.byName(k.Node)
		switch {
		case n == nil || !w.operatorTalks(n):
			return fmt.Errorf("%s: %w", k.Node, errUnreachable)
		case n.runID != k.RunID:
			return fmt.Errorf("%s runs %s", k.Node, n.runID)
		}
		return nil
	}
	return s
}
