// Package election is the election model's algebra: which replication histories carry a
// shard's data (a lineage) and whose data contains whose, judged from what Valkey reports
// (replication IDs, offsets, key counts) and the chain of histories the operator recorded.
//
// It is pure (the standard library only) and knows nothing of observations, persisted state
// or decisions: package machine reads those, builds a [Lineage] and asks it. Every claim that
// one node's data contains another's, or a history up to an offset, can be collected
// ([Containment]) so that a simulator that knows the data checks it (machine/sim's oracle).
// docs/development/election.md is the written model.
package election
