package machine

import "fmt"

// Valkey gives a primary that has no replication backlog a new replication ID, and clears
// its previous one, when its first replica syncs ("Replication backlog created, my new
// replication IDs are …"). A node has a backlog once it synced as a replica or served one, so
// this happens to a node promoted after a restart (the restarted writer, a node restored from
// a snapshot, a reseed) when the failover re-points the replicas to it. The process and its
// data are the same; only the name of its history changed, and nothing else reports the link
// between the two. Unrecorded, the next failover finds no node of the recorded history and
// waits forever (a second fault after a restarted primary was re-elected).

func guardHistoryRenamed(d *decider) (outcome, bool) {
	for s, rec := range d.p.Shards {
		n := d.v.node(rec.Primary)
		if !alive(n, rec.RunID) || !renamedBy(n, rec.History) {
			continue
		}
		next := d.p.Clone()
		next.Shards[s].History = renamedHistory(n, rec.History)
		if op := d.p.Op; d.p.State == FailingOver && op.Election.Shard == s && op.Election.Lost == rec.Primary && op.Election.LostRunID == rec.RunID {
			// Before any election the record is the lost primary's: its history is what the
			// candidates must continue, and what a recovery is recognised by.
			next.Op.Election.LostHistory = next.Shards[s].History
		}
		return outcome{next: next, message: fmt.Sprintf("shard %d: %s renamed its history %s to %s on its first replica's sync (offset %d)", s, n.Name, short(rec.History.ID), short(n.Valkey.ReplID), n.Valkey.Offset)}, true
	}
	return outcome{}, false
}

// renamedBy reports whether n, the recorded primary's process, reports another history than
// the recorded h and no previous one: a promotion would name h as the previous history.
func renamedBy(n *Node, h History) bool {
	return servesAnotherHistory(n, h) && n.Valkey.ReplID2 == ""
}

// servesAnotherHistory reports whether n is a primary of another history than the recorded h.
func servesAnotherHistory(n *Node, h History) bool {
	v := n.Valkey
	return v.Role == RolePrimary && h.ID != "" && v.ReplID != "" && v.ReplID != h.ID
}

// renamedHistory is h continued by n's new ID. Valkey keeps the offset across the rename, and
// nothing but n ever held h beyond where it stood (the rename happens before any replica
// syncs), so the new history contains h up to n's offset.
func renamedHistory(n *Node, h History) History {
	return History{ID: n.Valkey.ReplID, PrevID: h.ID, PrevEnd: n.Valkey.Offset + 1}.continuing(h)
}
