package machine

import "fmt"

// A recorded primary can hand its role over (FAILOVER TO, by a person or another tool) and be
// handed it back between two surveys: the same process, primary again, with writes intact all
// the way (FAILOVER TO waits for the target to catch up each time), under a history promoted
// from the intermediate one. Nothing the machine sees names the recorded history any more: the
// intermediate node, now a replica, reports the primary's new ID. Unrecorded, the next planned
// hand-over away from it was not recognised (its target names the primary's current history,
// not the recorded one): the target was fenced and pointed back at the old primary while the
// old primary followed the target, and the shard had no primary for good (found by the
// simulator, regressions/handed-over-and-back-unseen.sched).
//
// The record then continues the recorded history through the intermediate one, both up to
// where the primary's current history began (its second_repl_offset): the recorded history
// had one writer, this process, which stopped writing it when it handed over, at or before
// that point, so no node holds it beyond. The same goes for a primary whose history was
// promoted from the recorded one itself (a FAILOVER TO it began and abandoned once it had
// turned replica gives it a new ID continuing its own, as does a person's REPLICAOF and back
// within a survey): the new history continues the recorded one directly.

func guardHistoryTakenBack(d *decider) (outcome, bool) {
	for s, rec := range d.p.Shards {
		n := d.v.node(rec.Primary)
		if !alive(n, rec.RunID) || !takenBackBy(n, rec.History) {
			continue
		}
		next := d.p.Clone()
		next.Shards[s].History = takenBackHistory(n, rec.History)
		how := "it handed its role over and took it back unseen"
		if n.Valkey.ReplID2 == rec.History.ID {
			how = "it turned replica and primary again unseen (an abandoned hand-over, say)"
		}
		return outcome{next: next, message: fmt.Sprintf("shard %d: %s, the recorded primary, serves history %s, promoted from %s at offset %d: %s; recorded as continuing %s", s, n.Name, short(n.Valkey.ReplID), short(n.Valkey.ReplID2), n.Valkey.SecondOffset-1, how, short(rec.History.ID))}, true
	}
	return outcome{}, false
}

// takenBackBy reports whether n, the recorded primary's process, is a primary of another
// history than the recorded h, promoted from another one (a rename names none:
// history-renamed).
func takenBackBy(n *Node, h History) bool {
	return servesAnotherHistory(n, h) && n.Valkey.ReplID2 != "" && n.Valkey.SecondOffset > 0
}

// takenBackHistory is n's history continuing h through the intermediate history (see above).
func takenBackHistory(n *Node, h History) History {
	v := n.Valkey
	links := []HistoryLink{{ID: v.ReplID2, End: v.SecondOffset}}
	if v.ReplID2 != h.ID {
		links = append(links, HistoryLink{ID: h.ID, End: v.SecondOffset})
	}
	return History{ID: v.ReplID}.withLinks(links).continuing(h)
}
