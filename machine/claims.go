package machine

import (
	"fmt"
	"slices"
)

// Slot claims (cluster mode). A node serves slots by claiming them with its config epoch;
// wherever two claims on a slot meet, the higher epoch wins, and the node with the lower one
// drops the slot with every write it took for it. A takeover behind a partition makes a claim
// that only the nodes on its side hear. If a later failover elects a node from the other side
// (a primary elected in place keeps its old claim, a takeover gets one epoch above what its
// node has heard of), its claim can be older than one the machine saw: opened, it takes
// writes, and when the partition heals the newer claim wins the slots back and those writes
// are lost (found by the simulator: sim/testdata/regressions/cluster-promote-stale-claim.sched).
//
// So the machine records the newest claim it has seen for each shard (ShardRecord.ClaimEpoch
// and ClaimNode, at every transition), and a failover opens its candidate only once the
// candidate's own claim is newer than that one and every other claim on its slots the
// observation shows. Promote asks the candidate for a newer epoch (CLUSTER BUMPEPOCH); a node
// can only exceed the epochs it has heard of, so behind the partition it waits, and says why.

// recordClaims folds the newest claim the observation shows for each shard into the records:
// a primary of the shard that serves slots, with a config epoch above the recorded one.
func (d *decider) recordClaims(shards []ShardRecord) []ShardRecord {
	if d.v.spec.Mode != ModeCluster {
		return shards
	}
	out := shards
	for s := range shards {
		for _, n := range d.v.shard(s) {
			if !usable(n) || n.Valkey.Role != RolePrimary || len(n.Valkey.Slots) == 0 || n.Valkey.NodeID == "" ||
				n.Valkey.ConfigEpoch <= out[s].ClaimEpoch {
				continue
			}
			if &out[0] == &shards[0] {
				out = slices.Clone(shards)
			}
			out[s].ClaimEpoch, out[s].ClaimNode = n.Valkey.ConfigEpoch, n.Valkey.NodeID
		}
	}
	return out
}

// claimNewest reports whether c's claim on shard s's slots is newer than every other claim
// the machine knows of: the recorded one and those the observation shows (other primaries of
// the shard, and every view's claims on slots c serves). If not, it says which is newer.
func (d *decider) claimNewest(p Persisted, s int, c *Node) (string, bool) {
	if d.v.spec.Mode != ModeCluster || s >= len(p.Shards) {
		return "", true
	}
	mine := c.Valkey.ConfigEpoch
	newer := func(epoch uint64, id string) bool { return id != c.Valkey.NodeID && epoch >= mine }
	if rec := p.Shards[s]; rec.ClaimNode != "" && newer(rec.ClaimEpoch, rec.ClaimNode) {
		return fmt.Sprintf("%s's claim on shard %d's slots (epoch %d) is not newer than the one node %s made (epoch %d, recorded): opened now, it would lose the slots, with the writes it took, when that claim is heard again; waiting until %s hears of it (the partition heals) and takes a newer epoch",
			c.Name, s, mine, short(rec.ClaimNode), rec.ClaimEpoch, c.Name), false
	}
	for _, n := range d.v.shard(s) {
		if n != c && usable(n) && n.Valkey.Role == RolePrimary && len(n.Valkey.Slots) > 0 && newer(n.Valkey.ConfigEpoch, n.Valkey.NodeID) {
			return fmt.Sprintf("%s's claim on shard %d's slots (epoch %d) is not newer than %s's (epoch %d)", c.Name, s, mine, n.Name, n.Valkey.ConfigEpoch), false
		}
	}
	for _, n := range d.v.nodes {
		if !usable(n) {
			continue
		}
		for _, k := range n.Valkey.Known {
			if newer(k.ConfigEpoch, k.ID) && overlaps(k.Ranges, c.Valkey.Slots) {
				return fmt.Sprintf("%s's claim on shard %d's slots (epoch %d) is not newer than node %s's on some of them (epoch %d, in %s's view)", c.Name, s, mine, short(k.ID), k.ConfigEpoch, n.Name), false
			}
		}
	}
	return "", true
}
