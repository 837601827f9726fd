package machine

import "fmt"

// Restoring reloads every shard from the snapshot of Op.Restore: writes are fenced on every
// master of a shard not restored yet, and once its recorded primary is observed fenced (or
// known dead) one node per shard loads the snapshot (a new, empty
// replication history plus the snapshot's data), snapshot-loaded records it as the shard's
// primary, the other nodes resync from it, and restore-complete returns to Steady, which
// opens the restored primaries for writes. Writes acknowledged after the snapshot was taken
// are discarded: that is what a restore is. A failover does not pre-empt a restore (the
// restore re-elects every shard's primary itself), and a spec change does not abort it. A
// newer restore request, once checked, replaces the one under way (restore-requested again):
// every shard is then loaded from the newer snapshot, and nothing is given back.
//
// A load refused for what the snapshot holds (its files changed after the check) is not tried
// again: the restore then hands a serving cluster back as it was (restore-given-back), if no
// node's data has changed yet, and otherwise waits, fenced, for a snapshot that loads. What
// tells that a node's data has not changed: it is the process the shard recorded, a primary,
// still under the recorded history (as its current ID, or as its previous one: a replica
// detached from an unfinished sync shifts to a new ID and keeps its data); every load gives
// the node a new history before its first change (a full sync ends with the source's ID, and
// the key-by-key load of cluster mode takes a new one before it empties the node).

// restored reports whether shard s's record describes a primary that holds the snapshot:
// the recorded process answers as a primary of the recorded history, loaded from it. A node
// that loaded the snapshot starts a new history, so a record made before the load does not
// count even when it names the same process.
func (d *decider) restored(p Persisted, s int) bool {
	if s >= len(p.Shards) {
		return false
	}
	rec := p.Shards[s]
	n := d.v.node(rec.Primary)
	return alive(n, rec.RunID) && n.Valkey.Role == RolePrimary && n.Valkey.Snapshot == p.Op.Restore.Request && n.Valkey.ReplID == rec.History.ID
}

// loaded finds a node of shard s that loaded the snapshot and serves replicas.
func (d *decider) loaded(p Persisted, s int) *Node {
	for _, n := range d.v.shard(s) {
		if servesReplicas(n) && n.Valkey.Snapshot == p.Op.Restore.Request {
			return n
		}
	}
	return nil
}

func guardSnapshotLoaded(d *decider) (outcome, bool) {
	p := d.p
	for s := range p.Shards {
		if d.restored(p, s) {
			continue
		}
		if n := d.loaded(p, s); n != nil {
			next := p
			next.Shards = recordPrimary(p.Shards, s, n)
			next.Op.Restore.GiveBack = false
			return outcome{next: next, message: fmt.Sprintf("shard %d: %s loaded snapshot %s", s, n.Name, p.Op.Restore.Snapshot)}, true
		}
	}
	return outcome{}, false
}

func guardRestoreComplete(d *decider) (outcome, bool) {
	p := d.p
	for s := range p.Shards {
		if !d.restored(p, s) {
			return outcome{}, false
		}
		if ok, _ := d.shardConverged(p, s, false); !ok {
			return outcome{}, false
		}
	}
	next := p
	next.Restored = p.Op.Restore.Request
	next.Op = Operation{}
	return outcome{next: next, message: fmt.Sprintf("restore %s complete", restoreName(p.Op.Restore.Request, p.Op.Restore.Snapshot))}, true
}

// refusedLoad says why a load of the restore under way was refused ("": none was).
func (d *decider) refusedLoad(p Persisted) string {
	if r := d.v.spec.RefusedLoad; r.ID != "" && r.ID == p.Op.Restore.Request {
		return "refused: " + r.Why
	}
	return ""
}

// untouched reports whether shard s's data is still what it was before the restore: its
// recorded primary answers as the recorded process, a primary that did not load the snapshot,
// under the recorded history (current or previous ID; see above).
func (d *decider) untouched(p Persisted, s int) bool {
	rec := p.Shards[s]
	n := d.v.node(rec.Primary)
	return alive(n, rec.RunID) && n.Valkey.Role == RolePrimary && n.Valkey.Snapshot != p.Op.Restore.Request &&
		rec.History.ID != "" && (n.Valkey.ReplID == rec.History.ID || n.Valkey.ReplID2 == rec.History.ID)
}

// giveBack is why a refused restore cannot hand the cluster back ("": it can).
func (d *decider) giveBack(p Persisted) string {
	if !p.Op.Restore.GiveBack {
		return "the cluster cannot be given back as it was: a new cluster opens only with the snapshot it is created from, and a shard has loaded one already"
	}
	for s := range p.Shards {
		if !d.untouched(p, s) {
			return fmt.Sprintf("shard %d's recorded primary %s is not seen with the data it had (it may have been emptied for the load, or restarted)", s, p.Shards[s].Primary)
		}
	}
	return ""
}

func guardRestoreGivenBack(d *decider) (outcome, bool) {
	p := d.p
	why := d.refusedLoad(p)
	if why == "" || d.giveBack(p) != "" {
		return outcome{}, false
	}
	next := p
	next.Op = Operation{}
	return outcome{next: next, message: fmt.Sprintf("restore %s: %s; no node's data had changed: the cluster is given back as it was and opens for writes again", restoreName(p.Op.Restore.Request, p.Op.Restore.Snapshot), why)}, true
}

// guardRestoreReplaced starts a newer, checked restore request in place of the one under way.
func guardRestoreReplaced(d *decider) (outcome, bool) {
	r, p := d.v.spec.Restore, d.p
	if r == nil || r.ID == "" || r.Pending != "" || r.ID == p.Op.Restore.Request || r.ID == p.Restored || r.Shards != len(p.Shards) {
		return outcome{}, false
	}
	next := p
	next.Op = Operation{Restore: Restore{Request: r.ID, Snapshot: r.Snapshot, GiveBack: p.Op.Restore.GiveBack}}
	return outcome{next: next, message: fmt.Sprintf("restore %s replaces restore %s, which had not completed", restoreName(r.ID, r.Snapshot), restoreName(p.Op.Restore.Request, p.Op.Restore.Snapshot))}, true
}

func (d *decider) restoreActions(p Persisted, b *actionList) {
	d.ensureObjects(p, len(p.Shards), b)
	refused := d.refusedLoad(p)
	for s := range p.Shards {
		if d.restored(p, s) {
			d.converge(p, s, false, b)
			continue
		}
		for _, n := range d.v.shard(s) {
			if usable(n) && n.Valkey.Role == RolePrimary && !n.Valkey.WritesFenced {
				b.add(Fence{Target: TargetOf(s, n)})
			}
		}
		if d.loaded(p, s) != nil {
			continue // snapshot-loaded records it on the next observation
		}
		if refused != "" {
			// Never tried again: the same files would be refused again, and a load that had
			// begun may have emptied the node.
			b.wait(Wait{Kind: WaitRestoreRefused, Shard: s, ID: restoreName(p.Op.Restore.Request, p.Op.Restore.Snapshot), Detail: refused, Also: d.giveBack(p)})
			continue
		}
		// Load only once the shard's primary can no longer accept writes: otherwise writes
		// acknowledged by it after the load would be on neither side.
		rec := p.Shards[s]
		if _, gone := d.oldPrimaryGone(Operation{Election: Election{Writer: rec.Primary, WriterRunID: rec.RunID}}); !gone {
			b.wait(Wait{Kind: WaitRestoreFence, Shard: s, Node: rec.Primary})
			continue
		}
		into := d.v.node(p.Shards[s].Primary)
		if !usable(into) {
			into = d.freeChoice(s)
		}
		if into == nil {
			b.wait(Wait{Kind: WaitRestoreNoNode, Shard: s})
			continue
		}
		b.add(RestoreSnapshot{Target: TargetOf(s, into), Snapshot: p.Op.Restore.Snapshot, RequestID: p.Op.Restore.Request})
	}
}

// restoreWaits says why a restore the spec asks for of a Steady cluster does not start ("":
// none is asked for, or it can): its snapshot is still being checked, or was refused with the
// reason (the operator checks a backup before the machine may act on it). A new cluster says
// so through its bootstrap's wait.
func (d *decider) restoreWaits(p Persisted) string {
	r := d.v.spec.Restore
	if r == nil || r.ID == "" || r.Pending == "" || r.ID == p.Restored {
		return ""
	}
	return "restore " + r.ID + ": " + r.Pending
}

// restoreName names a restore in messages: its request, and the snapshot when that is another
// name (the operator names both by the backup's location).
func restoreName(id, snapshot string) string {
	if id == snapshot || snapshot == "" {
		return id
	}
	return fmt.Sprintf("%s from snapshot %s", id, snapshot)
}
