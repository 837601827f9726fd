package machine

import "slices"

// A deposed pod that may hold the line. Its mark (deposed.go) counts a deposed pod restarted
// from its append-only file as what it was deposed with: the keys beyond are taken for writes
// off the line. That is sure only while nothing could have made the pod follow the line since.
// In cluster mode Valkey makes a deposed primary the replica of the node that took its slots
// over, of its own shard id, by itself (src/cluster_legacy.c, clusterUpdateSlotsConfigWith):
// it can full-sync the line, acknowledge WAIT writes as a replica, and restart from its file
// before any decision sees it on the line, with no key count recorded to measure the sync by
// (as deposed-resync records one before the machine asks a pod to follow). Its keys beyond the
// mark are then the line's writes it synced or writes it took off the line before it was
// deposed, and nothing observed tells which: a restart from an append-only file keeps no
// replication offset, and what a cluster node keeps in nodes.conf (whom it replicates) is
// written when it starts to follow, not when a sync completes. Electing by the mark may lose
// acknowledged writes; electing the pod may keep writes the shard gave up. So the election
// waits for a person, who may give the pod's keys beyond its mark up by naming it in
// valkey.fsm.dev/failover-without (Spec.FailoverWithout); the election then counts it by its
// mark.
//
// The wait is as narrow as the ambiguity: a deposed pod whose place is known (trusted by
// offset, on the line: it has no mark any more, forgetResynced) elects as before, and so does
// one whose extra keys cannot outweigh the elected node (no more keys than it holds).

// deposedMayHoldTheLine returns the wait for the first candidate of cands, other than c (the
// node the election picks), that is a deposed pod of unknown place that may hold more of the
// line than c and that the user has not given up; ok false when there is none.
func (d *decider) deposedMayHoldTheLine(op Operation, cands []candidate, c *Node) (Wait, bool) {
	for _, x := range mayHoldTheLine(d.v.spec, cands, c) {
		if !slices.Contains(d.v.spec.FailoverWithout, x.Name) {
			return Wait{Kind: WaitDeposedMayHoldTheLine, Shard: op.Election.Shard, Node: x.Name, Peer: c.Name, N: x.Valkey.Keys, Of: c.Valkey.Keys}, true
		}
	}
	return Wait{}, false
}

// deposedGivenUp names the deposed pods of cands that the election of c counts by their marks
// only because the user named them in valkey.fsm.dev/failover-without: their keys beyond the
// mark are given up by that decision, which the election's reason records.
func (d *decider) deposedGivenUp(cands []candidate, c *Node) string {
	var out []*Node
	for _, x := range mayHoldTheLine(d.v.spec, cands, c) {
		if slices.Contains(d.v.spec.FailoverWithout, x.Name) {
			out = append(out, x.Node)
		}
	}
	return names(out)
}

// mayHoldTheLine lists the candidates of cands, other than c, that are deposed pods restarted
// from their append-only files in cluster mode with no resync recorded, holding more keys than
// their marks and than c.
func mayHoldTheLine(spec Spec, cands []candidate, c *Node) []candidate {
	var out []candidate
	for _, x := range cands {
		if x.Node == c || x.mark == nil || !x.unmeasured {
			continue
		}
		if spec.Mode != ModeCluster || x.mark.Resyncing {
			// Outside cluster mode nothing but the machine makes a deposed pod follow, and it
			// records the resync first, with the pod's key count then: more keys than that
			// and the mark is gone (DeposedPod.synced). Only Valkey's own follow in cluster
			// mode leaves no such count to measure a sync by.
			continue
		}
		if x.Valkey.Keys > x.mark.Keys && x.Valkey.Keys > c.Valkey.Keys {
			out = append(out, x)
		}
	}
	return out
}
