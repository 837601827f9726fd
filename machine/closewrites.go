package machine

import "fmt"

// Closing writes for a final backup: a ValkeyCluster deleted with spec.deletion.finalBackup
// keeps running until its last backup completed, and that backup must hold every write a
// primary acknowledged. The operator observes the deletion as Spec.CloseWrites; the machine
// then closes each recorded primary to client writes (CloseWrites, the same action hibernation
// uses: the application user off, its connections closed) and never opens them again, in any
// state: a failover's new primary stays fenced (Promote keeps client writes closed, and only
// converge opens them). Replication goes on, so the replicas catch up with everything the
// primary acknowledged, and the backup, which the operator starts only once it has seen every
// recorded primary closed, reads a replica that caught up (or the primary). No transition is
// recorded: nothing of the cluster's record changes, and the cluster is going away.
//
// Planned operations do not start meanwhile: they wait for a converged cluster, and a
// primary closed to writes is not one.

// keepWritesClosed closes shard s's primary to client writes. A primary that also refuses
// its replicas (SyncFenced) is opened first: the replicas must be able to catch up, and the
// next turn closes its client writes again, before the backup starts.
func (d *decider) keepWritesClosed(s int, prim *Node, b *actionList) {
	switch {
	case prim.Valkey.SyncFenced:
		b.add(OpenWrites{Target: TargetOf(s, prim)})
	case !prim.Valkey.WritesFenced:
		b.add(CloseWrites{Target: TargetOf(s, prim)})
	}
}

// closeWritesWaits says what the cluster waits for while its writes are kept closed ("": they
// are not).
func (d *decider) closeWritesWaits(p Persisted) string {
	if !d.v.spec.CloseWrites {
		return ""
	}
	return fmt.Sprintf("deleting: client writes to the %d shard(s) are closed until the final backup completed", len(p.Shards))
}
