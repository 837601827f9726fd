package sim

import "github.com/valkey-fsm/valkey-operator/machine"

// nameBootstrapSource is the user's answer, once the faults stopped, to a bootstrap's wait that
// only a person can end (machine.WaitDataChoice): the nodes' data differ and none contains the
// others' (forked histories, or as many keys with different digests), so the machine asks for
// the pod whose data wins (valkey.fsm.dev/bootstrap-from): a person
// who reads the nodes' data names the pod that holds the most of what clients were promised
// (the fewest WAIT-acknowledged writes of the shard missing, then the most keys, then the
// lowest ordinal). The writes it lacks are discarded by that choice, not by the operator: they
// are exempt from the lost-write check. It reports whether the user acted.
func (s *Sim) nameBootstrapSource() bool {
	w := s.w
	why := s.op.lastDecision.Waiting
	if why.Kind != machine.WaitDataChoice || w.spec.BootstrapFrom != "" {
		return false
	}
	sh := why.Shard
	var best *node
	bestMissing := 0
	for _, n := range w.shardNodes(sh) {
		if !n.exists || !w.operatorTalks(n) || len(n.log) == 0 {
			continue
		}
		missing := len(w.unheld(n, sh))
		if best == nil || missing < bestMissing || missing == bestMissing && len(n.log) > len(best.log) {
			best, bestMissing = n, missing
		}
	}
	if best == nil {
		return false
	}
	for _, i := range w.unheld(best, sh) {
		w.writes[i].exempt = true
		w.note("write %d exempt: the user chose %s's data, which lacks it", w.writes[i].id, best.name)
	}
	w.spec.BootstrapFrom = best.name
	w.note("the user names %s in the annotation valkey.fsm.dev/bootstrap-from", best.name)
	return true
}

// unheld lists (as indexes into w.writes) the WAIT-acknowledged writes of shard sh, not yet
// exempt, that n does not hold.
func (w *World) unheld(n *node, sh int) []int {
	var out []int
	for i := range w.writes {
		wr := &w.writes[i]
		if wr.waitAcked && !wr.exempt && !n.has.get(wr.id) && w.shardOfKey(wr.key) == sh {
			out = append(out, i)
		}
	}
	return out
}
