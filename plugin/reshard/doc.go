// Package reshard is `kubectl valkey reshard NAME`: it shows the slot moves that balance a
// Cluster topology's hash slots over its shards (the machine's own plan, from the slots each
// shard's primary reports in status) and, with --shards, changes the shard count, which the
// operator carries out as a resharding. The operator keeps the slots balanced on its own: the
// verb never moves a slot itself.
package reshard
