package sim

import (
	"fmt"
	"slices"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// ViolationKind names a property that failed.
type ViolationKind string

const (
	// ViolationTwoPrimaries: two nodes of a shard accept writes at the same time.
	ViolationTwoPrimaries ViolationKind = "two-primaries"
	// ViolationLaggingPromotion: a node was promoted while it was behind a node the operator
	// saw (its data a strict prefix of that node's, missing writes of keys the shard serves).
	ViolationLaggingPromotion ViolationKind = "lagging-promotion"
	// ViolationEmptySource: a node restarted without its data fed, by full sync, a replica
	// that held writes of the shard's line the source lacked (wiping them).
	ViolationEmptySource ViolationKind = "empty-sync-source"
	// ViolationLostWrite: a node accepts writes without a WAIT-acknowledged write of its
	// shard (that faults did not destroy): the write is lost.
	ViolationLostWrite ViolationKind = "lost-wait-write"
	// ViolationScaledDownPrimary: a scale-down removed the pod of a shard's recorded primary:
	// scaling caused an unplanned failover (and may lose acknowledged writes) instead of
	// handing the primary over first.
	ViolationScaledDownPrimary ViolationKind = "scaled-down-primary"
	// ViolationForgotLive: the operator made the cluster forget (CLUSTER FORGET) the ID of a
	// node that still runs, or could run again on its volume: a node forgotten by mistake.
	ViolationForgotLive ViolationKind = "forgot-live-node"
	// ViolationLiveness: Steady was not reached within the bound after the faults stopped.
	ViolationLiveness ViolationKind = "no-steady"
	// ViolationMachine: a machine invariant failed (table, conditions, history, journal,
	// re-delivery, rebuild from the persisted state).
	ViolationMachine ViolationKind = "machine"
	// ViolationPasswords: a running node refuses the password clients were given, or a
	// replica authenticates with one that was retired (a password rotation out of order).
	ViolationPasswords ViolationKind = "passwords"
	// ViolationContainment: the election model claimed that a node's data contains another
	// node's, or a history up to an offset, and the node lacks a write of it (oracle.go).
	ViolationContainment ViolationKind = "containment"
	// ViolationModel: the simulated world contradicted itself (a bug of the simulator).
	ViolationModel ViolationKind = "model"
)

// Violation is one failed property at a tick.
type Violation struct {
	Kind   ViolationKind
	Tick   int64
	Detail string
}

func (v Violation) String() string { return fmt.Sprintf("t=%d %s: %s", v.Tick, v.Kind, v.Detail) }

// checkWorld checks the safety properties that hold at every tick.
func (w *World) checkWorld() {
	w.checkPasswords()
	var accepting []*node
	for _, n := range w.nodes {
		if w.acceptsWrites(n) {
			accepting = append(accepting, n)
		}
	}
	for i, a := range accepting {
		for _, b := range accepting[i+1:] {
			if a.shard == b.shard && w.sentinelsOverlap(a, b) {
				w.stats.SentinelOverlapTicks++
				continue
			}
			if a.shard == b.shard {
				w.violate(ViolationTwoPrimaries, "%s and %s both accept writes for shard %d", a.name, b.name, a.shard)
			}
		}
	}
	for _, n := range accepting {
		for i := range w.writes {
			wr := &w.writes[i]
			if !wr.waitAcked || wr.exempt || n.has.get(wr.id) || w.shardOfKey(wr.key) != n.shard {
				continue
			}
			if excused, lost := w.sentinelExcuses(n, wr); excused {
				continue // the overlap Sentinel's design allows, counted as such
			} else if lost {
				wr.exempt = true // Sentinel's "last failover wins"
				w.stats.SentinelLostWrites++
				continue
			}
			w.violate(ViolationLostWrite, "%s accepts writes for shard %d without WAIT-acknowledged write %d (key %d, acknowledged by %s at t=%d)", n.name, n.shard, wr.id, wr.key, wr.node, wr.tick)
			wr.exempt = true // report each lost write once
		}
	}
}

// checkPromotion is called for every promotion the operator is about to carry out, against
// the world as it was observed for the decision: the promoted node must not be behind a node
// the operator saw that holds the shard's line of writes (its data a strict prefix of that
// node's). Nodes off the line (an isolated old primary's forked writes) do not count: their
// extra writes are not the shard's. A promotion across a fork loses acknowledged writes and
// is caught by the WAIT check.
func (w *World) checkPromotion(p machine.Promote) {
	c := w.byName(p.Node)
	if c == nil {
		return
	}
	for _, n := range w.shardNodes(c.shard) {
		// A node the user gave up (valkey.fsm.dev/failover-without) holds writes the user
		// chose to lose.
		if n == c || !w.operatorTalks(n) || !w.onLine(n) || slices.Contains(w.spec.FailoverWithout, n.name) {
			continue
		}
		if len(c.log) < len(n.log) && isPrefix(c.log, n.log) && w.writesOfShard(n.log[len(c.log):], c.shard) {
			w.violate(ViolationLaggingPromotion, "promoting %s (offset %d) which is behind %s (offset %d)", c.name, len(c.log), n.name, len(n.log))
			return
		}
	}
}

// checkForget is called for every node ID the operator is about to make the cluster forget,
// against the world as it was observed for the decision: no node that runs, or whose pod may
// start again on its volume, may have it (a node forgotten by mistake). A pod that a scale-up
// starts on a retained volume after the decision is no mistake of the decision: the action
// was for the peers it saw, and the machine adds the node again when it sees it unjoined.
func (w *World) checkForget(a machine.ForgetNode) {
	if live := w.byID(a.ID); live != nil {
		w.violate(ViolationForgotLive, "forget-node %s: that is %s, a live node", a.ID, live.name)
	}
}

// writesOfShard reports whether some of writes is of a key shard s serves (or that no shard
// serves). In cluster mode a write whose slot moved to another shard went with it (the
// simulated MIGRATE copies it and leaves the source's log as it was): a node missing it loses
// nothing of this shard, and a loss on the shard that serves it is that shard's lost-write
// check, as for a full sync (handshake).
func (w *World) writesOfShard(writes []int32, s int) bool {
	return slices.ContainsFunc(writes, func(id int32) bool { return w.writeOfShard(id, s) })
}

// writeOfShard reports whether write id is of a key shard s serves now, or that no shard
// serves: not one whose slot moved to another shard.
func (w *World) writeOfShard(id int32, s int) bool {
	o := w.shardOfKey(w.writes[id].key)
	return o < 0 || o == s
}

// checkScaleDown is called for every pod a StatefulSet scale-down removes: it must not be the
// shard's recorded primary (the operator hands it over first). A node a person made primary
// behind the operator's back after the scale-down was decided is the actuator's to refuse
// (see apply), when it can see it.
func (w *World) checkScaleDown(n *node) {
	if n.shard < len(w.recorded) && w.recorded[n.shard].Primary == n.name && w.recorded[n.shard].RunID == n.runID && n.exists {
		w.violate(ViolationScaledDownPrimary, "the scale-down to %d replicas removed %s, the recorded primary of shard %d", w.objects.Replicas, n.name, n.shard)
	}
}
