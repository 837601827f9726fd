package sim

import "github.com/valkey-fsm/valkey-operator/machine"

// write plays one client write: the first node of the key's shard, from ordinal Start on,
// that the client reaches and that accepts writes takes it. With Wait the client then runs
// WAIT MinSyncReplicas: linked replicas without lag receive at once, and the write counts as
// WAIT-acknowledged when enough of them hold it.
func (w *World) write(wr Write) {
	s := w.shardOfKey(wr.Key)
	nodes := w.shardNodes(s)
	if s < 0 || len(nodes) == 0 {
		w.stats.WritesRejected++
		return
	}
	for i := range nodes {
		n := nodes[(wr.Start+i)%len(nodes)]
		if !w.clientTalks(n) || !w.acceptsWrites(n) {
			continue
		}
		id := int32(len(w.writes))
		n.appendWrite(id)
		w.placeWrite(n, id)
		w.extendLine(n, id)
		rec := writeRecord{id: id, key: wr.Key, node: n.name, runID: n.runID, tick: w.tick}
		w.stats.Writes++
		if wr.Wait && w.topo.MinSyncReplicas > 0 {
			rec.waitAcked = w.wait(n, id) >= w.topo.MinSyncReplicas
			if rec.waitAcked {
				w.stats.WaitAcked++
			}
		}
		w.writes = append(w.writes, rec)
		w.note("write %d key %d accepted by %s (WAIT-acknowledged: %v)", id, wr.Key, n.name, rec.waitAcked)
		return
	}
	w.stats.WritesRejected++
	w.note("write key %d rejected: no reachable node of shard %d accepts writes", wr.Key, s)
}

// wait counts the replicas of primary that hold write id after one immediate round.
func (w *World) wait(primary *node, id int32) int {
	n := 0
	for _, r := range w.nodes {
		if r.role != machine.RoleReplica || r.masterIP != primary.ip {
			continue
		}
		w.pumpReplica(r, true)
		// WAIT counts the acknowledgements that reach the primary.
		if r.linkUp && r.linkRun == primary.runID && r.has.get(id) && w.reaches(r, primary) {
			n++
		}
	}
	return n
}
