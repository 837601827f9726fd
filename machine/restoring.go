package machine

import "fmt"

// Restoring reloads every shard from the snapshot of Op.Target: writes are fenced on every
// master of a shard not restored yet, and once its recorded primary is observed fenced (or
// known dead) one node per shard loads the snapshot (a new, empty
// replication history plus the snapshot's data), snapshot-loaded records it as the shard's
// primary, the other nodes resync from it, and restore-complete returns to Steady, which
// opens the restored primaries for writes. Writes acknowledged after the snapshot was taken
// are discarded: that is what a restore is. A failover does not pre-empt a restore (the
// restore re-elects every shard's primary itself), and a spec change does not abort it: a
// newer restore request is carried out after this one.

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
	return alive(n, rec.RunID) && n.Valkey.Role == RolePrimary && n.Valkey.Snapshot == p.Op.Target && n.Valkey.ReplID == rec.History.ID
}

// loaded finds a node of shard s that loaded the snapshot and serves replicas.
func (d *decider) loaded(p Persisted, s int) *Node {
	for _, n := range d.v.shard(s) {
		if servesReplicas(n) && n.Valkey.Snapshot == p.Op.Target {
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
			return outcome{next: next, message: fmt.Sprintf("shard %d: %s loaded snapshot %s", s, n.Name, p.Op.Snapshot)}, true
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
	next.Restored = p.Op.Target
	next.Op = Operation{}
	return outcome{next: next, message: fmt.Sprintf("restore %s complete", restoreName(p.Op.Target, p.Op.Snapshot))}, true
}

func (d *decider) restoreActions(p Persisted, b *actionList) {
	d.ensureObjects(p, len(p.Shards), b)
	for s := range p.Shards {
		if d.restored(p, s) {
			d.converge(p, s, false, b)
			continue
		}
		for _, n := range d.v.shard(s) {
			if usable(n) && n.Valkey.Role == RolePrimary && !n.Valkey.WritesFenced {
				b.add(Fence{Shard: s, Node: n.Name, RunID: n.Valkey.RunID})
			}
		}
		if d.loaded(p, s) != nil {
			continue // snapshot-loaded records it on the next observation
		}
		// Load only once the shard's primary can no longer accept writes: otherwise writes
		// acknowledged by it after the load would be on neither side.
		rec := p.Shards[s]
		if _, gone := d.oldPrimaryGone(Operation{Writer: rec.Primary, WriterRunID: rec.RunID}); !gone {
			b.wait(fmt.Sprintf("shard %d: waiting for primary %s to be fenced before loading the snapshot", s, rec.Primary))
			continue
		}
		into := d.v.node(p.Shards[s].Primary)
		if !usable(into) {
			into = d.freeChoice(s)
		}
		if into == nil {
			b.wait(fmt.Sprintf("shard %d: no node answers to load the snapshot into", s))
			continue
		}
		b.add(RestoreSnapshot{Shard: s, Node: into.Name, RunID: into.Valkey.RunID, Snapshot: p.Op.Snapshot, RequestID: p.Op.Target})
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
