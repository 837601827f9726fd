package sim

import (
	"slices"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// giveUpDeposedKeys is the user's answer, once the faults stopped, to a failover's wait that
// only a person can end (machine.WaitDeposedMayHoldTheLine): a deposed pod restarted from its
// append-only file holds more keys than the node the election would pick, and nothing observed
// tells whether they are the line's writes it synced or writes off the line. The user's one
// way on is to name the pod in valkey.fsm.dev/failover-without, which gives its keys beyond its
// mark up: the WAIT-acknowledged writes the pod holds and the node to be elected lacks are
// discarded by that choice, not by the operator, and are exempt from the lost-write check.
// It reports whether the user acted.
func (s *Sim) giveUpDeposedKeys() bool {
	w := s.w
	why := s.op.lastDecision.Waiting
	if why.Kind != machine.WaitDeposedMayHoldTheLine || slices.Contains(w.spec.FailoverWithout, why.Node) {
		return false
	}
	pod, elected := w.byName(why.Node), w.byName(why.Peer)
	if pod == nil || elected == nil {
		return false
	}
	for _, i := range w.unheld(elected, why.Shard) {
		if pod.has.get(w.writes[i].id) {
			w.writes[i].exempt = true
			w.note("write %d exempt: the user gave up %s's keys beyond its mark, and %s lacks it", w.writes[i].id, pod.name, elected.name)
		}
	}
	w.spec.FailoverWithout = append(w.spec.FailoverWithout, pod.name)
	s.namedAt = s.op.status.Persisted.Seq
	w.stats.DeposedGivenUp++
	w.note("the user names %s in the annotation valkey.fsm.dev/failover-without", pod.name)
	return true
}

// clearFailoverWithout removes the annotation once the failover it was given for completed, as
// the operator does (operator/reconcile/cluster/failoverwithout.go), so that the user's decision
// never applies to a later failover. It reports whether it did.
func (s *Sim) clearFailoverWithout() bool {
	w := s.w
	t := s.op.lastDecision.Transition
	if len(w.spec.FailoverWithout) == 0 || t == nil || t.Event != machine.EventFailoverComplete || t.Seq <= s.namedAt {
		return false
	}
	w.spec.FailoverWithout = nil
	return true
}
