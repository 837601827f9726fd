package sim

import "github.com/valkey-fsm/valkey-operator/machine"

// Sabotage deliberately breaks one rule, in the simulated operator or world, never in the
// machine. It exists to show that the properties can fail: each one must be caught by the
// checks. Used by tests and by `simulate -sabotage`.
type Sabotage string

const (
	SabotageNone Sabotage = ""
	// SabotagePromoteLowest: a promotion goes to the visible node of the shard with the
	// lowest non-zero offset instead of the machine's choice.
	SabotagePromoteLowest Sabotage = "promote-lowest"
	// SabotagePromoteEmpty: a promotion goes to a visible node with no data, when there is one.
	SabotagePromoteEmpty Sabotage = "promote-empty"
	// SabotageOpenAtOnce: a node promoted by a failover is opened for writes right away,
	// without waiting for the old primary to be fenced.
	SabotageOpenAtOnce Sabotage = "open-at-once"
	// SabotageIgnoreQuorum: nodes the operator cannot reach are left out of the observation,
	// so the machine fails over without knowing what they hold.
	SabotageIgnoreQuorum Sabotage = "ignore-quorum"
	// SabotageNoStartFence: nodes start unfenced (a pod template without the start-up
	// fence), so replicas reconnect to a restarted, empty primary on their own.
	SabotageNoStartFence Sabotage = "no-start-fence"
	// SabotageShrinkFirst: the objects ask for the spec's replica count as soon as it
	// changes, wherever the primary is (scaling as an EnsureObjects of the spec, without the
	// machine's hand-over first, nor the actuator's check that no pod it removes is a
	// primary).
	SabotageShrinkFirst Sabotage = "shrink-first"
	// SabotageBootstrapLowest: a bootstrap ignores what the nodes hold (as the machine did
	// before the bootstrap election): the machine sees neither keys nor old volumes while
	// Bootstrapping, so it wires the shard to the lowest ordinal that answers.
	SabotageBootstrapLowest Sabotage = "bootstrap-lowest"
	// SabotageOneClock: every operator incarnation claims the same clock (as the machine
	// assumed before clocks were named), so a new incarnation whose clock is ahead measures
	// the fence timeout from an election timed on another clock, and ends it early.
	SabotageOneClock Sabotage = "one-clock"
	// SabotageTrustUnflushed: the machine is told that nodes fsync every write (as it
	// assumed before the real chaos suite lost a write to it) while they run appendfsync
	// everysec, so it takes the primary restarted from its append-only file for complete
	// when its file lacks writes a replica acknowledged.
	SabotageTrustUnflushed Sabotage = "trust-unflushed"
	// SabotageEmptyKeepsID: a cluster-mode load empties a node without taking a new
	// replication ID first (as the key-by-key load once did for a node without a backlog),
	// so a refused restore looks as if it had changed nothing.
	SabotageEmptyKeepsID Sabotage = "empty-keeps-id"
)

// Sabotages lists every sabotage (not None).
var Sabotages = []Sabotage{SabotagePromoteLowest, SabotagePromoteEmpty, SabotageOpenAtOnce, SabotageIgnoreQuorum, SabotageNoStartFence, SabotageShrinkFirst, SabotageBootstrapLowest, SabotageOneClock, SabotageTrustUnflushed, SabotageEmptyKeepsID}

// observation tampers with what the machine sees.
func (s Sabotage) observation(state machine.State, obs machine.Observation) machine.Observation {
	if s == SabotageTrustUnflushed {
		obs.Spec.FsyncAlways = true
		return obs
	}
	if s == SabotageBootstrapLowest && state == machine.Bootstrapping {
		nodes := append([]machine.Node(nil), obs.Nodes...)
		for i := range nodes {
			nodes[i].Pod.VolumeFromBefore = false
			nodes[i].Valkey.Keys = 0
		}
		obs.Nodes = nodes
		return obs
	}
	if s != SabotageIgnoreQuorum {
		return obs
	}
	kept := obs.Nodes[:0:0]
	for _, n := range obs.Nodes {
		if n.Reachable {
			kept = append(kept, n)
		}
	}
	obs.Nodes = kept
	return obs
}

// actions rewrites what the operator carries out.
func (s Sabotage) actions(w *World, state machine.State, actions []machine.Action) []machine.Action {
	if s == SabotageShrinkFirst {
		return shrinkFirst(w, state, actions)
	}
	if s != SabotagePromoteLowest && s != SabotagePromoteEmpty && s != SabotageOpenAtOnce {
		return actions
	}
	out := make([]machine.Action, 0, len(actions)+1)
	for _, a := range actions {
		p, ok := a.(machine.Promote)
		if !ok {
			out = append(out, a)
			continue
		}
		switch s {
		case SabotageOpenAtOnce:
			out = append(out, p)
			if state == machine.FailingOver {
				out = append(out, machine.OpenWrites(p))
			}
			continue
		case SabotagePromoteLowest, SabotagePromoteEmpty:
			var pick *node
			for _, n := range w.shardNodes(p.Shard) {
				if !w.operatorTalks(n) || n.name == p.Node {
					continue
				}
				if s == SabotagePromoteEmpty && len(n.log) == 0 {
					pick = n
					break
				}
				if s == SabotagePromoteLowest && len(n.log) > 0 && (pick == nil || len(n.log) < len(pick.log)) {
					pick = n
				}
			}
			if c := w.byName(p.Node); pick != nil && c != nil && (s == SabotagePromoteEmpty || len(pick.log) < len(c.log)) {
				p.Node, p.RunID = pick.name, pick.runID
			}
		}
		out = append(out, p)
	}
	return out
}

// shrinkFirst makes every EnsureObjects ask for the spec's replica count, and adds one when the
// objects ask for another count, in every state but Bootstrapping.
func shrinkFirst(w *World, state machine.State, actions []machine.Action) []machine.Action {
	if state == machine.Bootstrapping || w.objects.Shards == 0 {
		return actions
	}
	out := make([]machine.Action, 0, len(actions)+1)
	found := false
	for _, a := range actions {
		if e, ok := a.(machine.EnsureObjects); ok {
			e.Replicas, found = w.spec.Replicas, true
			a = e
		}
		out = append(out, a)
	}
	if !found && w.objects.Replicas != w.spec.Replicas {
		e := machine.EnsureObjects{Shards: w.objects.Shards, Replicas: w.spec.Replicas, Revision: w.objects.Revision}
		out = append([]machine.Action{e}, out...)
	}
	return out
}
