// Package election is the election model's algebra: which replication histories carry a
// shard's data (a lineage) and whose data contains whose, judged from what Valkey reports
// (replication IDs, offsets, key counts) and the chain of histories the operator recorded.
//
// It is pure (the standard library only) and knows nothing of observations, persisted state
// or decisions: package machine reads those, builds a [Lineage] and asks it. Every claim that
// one node's data contains another's, or a history up to an offset, can be collected
// ([Containment]) so that a simulator that knows the data checks it (machine/sim's oracle).
// docs/development/election.md is the written model.
//
// Replication histories, in Valkey's terms: every primary has a replication ID
// (master_replid) and an offset. A replica that syncs takes its primary's ID. A promoted node
// gets a fresh ID and remembers the one it continues as master_replid2, valid for offsets
// below second_repl_offset (exclusive). A node restarted from an RDB file, started as a
// replica (as the pod template starts every node), keeps its ID and offset but forgets
// master_replid2. Valkey itself uses these fields to decide whether a replica can continue
// from a primary (partial resync); the model uses them the same way to decide whose data
// contains whose.
//
// A node restarted from its append-only file (the Durable profile) keeps its data but not its
// place: Valkey (8.x) restores the replication ID and offset only from RDB files, so the node
// reports a fresh ID at offset 0, like an empty node. Its data is a prefix of the shard's
// line up to a point nobody can tell (unmeasured); only its key count says it is not empty.
// Against it the model knows two things: an empty node holds nothing it lacks, and, when
// every write is fsynced before it is acknowledged (appendfsync always), the last writer
// restarted from its own append-only file holds everything (complete): every write of the
// line went through it, and its file has them all after a process crash. With everysec it
// does not: the file may lack the last two seconds of writes a replica acknowledged, and the
// writer is one more unmeasured node.
package election
