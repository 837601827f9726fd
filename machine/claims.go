package machine

import (
	"fmt"
	"slices"
	"strings"
)

// Slot claims (cluster mode). A node serves slots by claiming them with its config epoch;
// wherever two claims on a slot meet, the higher epoch wins, and the node with the lower one
// drops the slot with every write it took for it. A takeover behind a partition makes a claim
// that only the nodes on its side hear. If a later failover elects a node from the other side
// (a primary elected in place keeps its old claim, a takeover gets one epoch above what its
// node has heard of), its claim can be older than one the machine saw: opened, it takes
// writes, and when the partition heals the newer claim wins the slots back and those writes
// are lost (regressions/cluster-promote-stale-claim.sched).
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
	if rec := p.Shards[s]; rec.ClaimNode != "" && newer(rec.ClaimEpoch, rec.ClaimNode) && !d.claimGone(rec.ClaimNode) {
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

// A claim whose node is gone for good. A node that restarted on an empty volume is a new node;
// its old ID stays in the others' views (a ghost, ghosts.go) with its claim. That claim can only
// be heard again from a view that still holds it: gossip carries no other node's slots, and an
// UPDATE message names the claiming node, which a view that has forgotten it ignores. So once
// every pod answers with an ID of its own (none is the claiming node, none is unseen), no idle
// claim's volume could come back as it, and no view knows the ID any more, the claim is never
// heard again. Until then the failover settles such claims on its candidate's slots:
//
//   - A ghost claiming slots the candidate serves, with an epoch no newer than the candidate's:
//     a tie that nothing breaks (Valkey's collision handling needs both nodes to talk, and
//     BUMPEPOCH answers STILL to a node whose epoch is the highest it knows), the rule of
//     claimedAsNew. It is forgotten everywhere.
//   - The candidate serves no slots and the shard's recorded claim is a stranded ghost's (no node
//     follows it, no answering primary serves any of its slots): a takeover by a replica that
//     followed a node which had lost the slots to that claim already claims nothing, and a
//     newer claim nothing can make would be waited for good
//     (regressions/cluster-claim-epoch-never-heard.sched). The ghost is forgotten
//     everywhere and the candidate is assigned its slots, in one decision (the assignment is
//     skipped if the forgetting fails): the slots' keys are the line's, which the candidate
//     holds, the claim was the shard's.
//
// Writes stay fenced until claimNewest says the candidate's claim is the newest: its epoch
// above every claim a view still shows, and above the recorded one unless that one is gone.

// claimGone reports whether no one can hear the claim of node id again (see above).
func (d *decider) claimGone(id string) bool {
	if d.v.spec.Mode != ModeCluster || id == "" || len(d.obs.IdleClaims) > 0 || len(d.obs.ClaimsBeyond) > 0 {
		return false
	}
	ids, ok := d.podIDs()
	if !ok || ids[id] {
		return false
	}
	for _, n := range d.obs.Nodes {
		for _, k := range n.Valkey.Known {
			if k.ID == id {
				return false
			}
		}
	}
	return true
}

// settleGhostClaims adds the actions that settle ghost claims on c's slots (see above), and
// says whether it did.
func (d *decider) settleGhostClaims(p Persisted, s int, c *Node, b *actionList) bool {
	if d.v.spec.Mode != ModeCluster || s >= len(p.Shards) || c.Valkey.Role != RolePrimary || len(d.obs.IdleClaims) > 0 || len(d.obs.ClaimsBeyond) > 0 {
		return false
	}
	rec := p.Shards[s]
	served := d.servedSlots()
	var forgot []string
	for _, g := range d.ghosts() {
		if g.live || g.open || g.slots == 0 {
			continue
		}
		switch {
		case overlaps(g.ranges, c.Valkey.Slots) && !g.followed && g.coveredBy(c):
			b.add(ForgetNode{ID: g.id, IP: g.ip})
			forgot = append(forgot, fmt.Sprintf("%s (epoch %d, no newer than %s's %d)", g.id, g.epoch, c.Name, c.Valkey.ConfigEpoch))
		case len(c.Valkey.Slots) == 0 && g.id == rec.ClaimNode && g.epoch <= rec.ClaimEpoch && g.stranded(served):
			b.add(ForgetNode{ID: g.id, IP: g.ip})
			b.add(AssignSlots{Target: TargetOf(s, c), Slots: g.ranges})
			forgot = append(forgot, fmt.Sprintf("%s (the shard's recorded claim, epoch %d; its slots go to %s)", g.id, g.epoch, c.Name))
		}
	}
	if len(forgot) == 0 {
		return false
	}
	b.wait(Wait{Kind: WaitGhostClaimsForgotten, Shard: s, Node: c.Name, Detail: strings.Join(forgot, "; ")})
	return true
}
