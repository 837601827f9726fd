package machine

// A classic slot migration hands a batch of slots over in two steps: CLUSTER SETSLOT NODE on
// the target, which takes them with a config epoch newer than any it has heard of (or keeps its
// own when that is the newest it knows), then on the source, which stops claiming them. Between
// the two both claim them, and the newer claim wins wherever they meet. If the source's is the
// newer, the target, whose view now gives slots it holds keys in to another node, deletes those
// keys ("Deleting keys in dirty slot", clusterUpdateSlotsConfigWith). Found in CI: a re-created
// cluster's bootstrap left two primaries on one epoch, the resharding started 1.5 s later, and
// the first slot handed over lost its keys. The source's claim is the newer when:
//
//   - it shares its epoch with another primary it knows: Valkey parts the two by giving the one
//     with the smaller node ID an epoch newer than any it has heard of, which may be newer than
//     the target's (clusterHandleConfigEpochCollision);
//   - the target has not heard of the source's epoch yet: its claim then comes under an epoch
//     no newer than the source's (a review found it: a source just parted from a collision).
//   - a node is the source of one move and the target of another at once: its import's new
//     epoch covers the slots it still claims as a source.
//
// So no slot moves in those cases (the first two wait a few gossip rounds; the third moves one
// after the other). Every other epoch Valkey makes is newer than any its maker has heard of (a
// bump, an election; the operator turns Valkey's own elections off), so a source that shares
// none and whose epoch its target has heard when the move is decided keeps an older claim
// until the move ends.

// sharedEpoch is a primary that answers, that n knows on the cluster bus (only such a node
// collides with it), and that claims the same config epoch as n; nil when there is none.
func (d *decider) sharedEpoch(n *Node) *Node {
	if n == nil || !n.Reachable || d.v.spec.Mode != ModeCluster {
		return nil
	}
	known := make(map[string]bool, len(n.Valkey.Known))
	for _, k := range n.Valkey.Known {
		known[k.ID] = true
	}
	for i := range d.obs.Nodes {
		o := &d.obs.Nodes[i]
		if o.Name != n.Name && o.Reachable && o.Valkey.Role == RolePrimary && known[o.Valkey.NodeID] && o.Valkey.ConfigEpoch == n.Valkey.ConfigEpoch {
			return o
		}
	}
	return nil
}

// epochUnheard is the epoch to's view gives from when it is older than from's own (0 and false
// otherwise, also when to does not list from: then the move's SETSLOT IMPORTING fails anyway).
func epochUnheard(from, to *Node) (uint64, bool) {
	if from == nil || to == nil {
		return 0, false
	}
	for _, k := range to.Valkey.Known {
		if k.ID == from.Valkey.NodeID && from.Valkey.NodeID != "" {
			return k.ConfigEpoch, k.ConfigEpoch < from.Valkey.ConfigEpoch
		}
	}
	return 0, false
}

// migrate adds the move of r from node from (of shard fromShard) to node to (of shard
// toShard), aimed at the processes they run, unless the target's claim could come under an
// epoch no newer than the source's (see above): then it waits.
func (d *decider) migrate(fromShard, toShard int, from, to *Node, r SlotRange, b *actionList) {
	if o := d.sharedEpoch(from); o != nil {
		b.wait(Wait{Kind: WaitSharedEpoch, Shard: fromShard, Node: from.Name, Peer: o.Name, N: int64(from.Valkey.ConfigEpoch)})
		return
	}
	if seen, unheard := epochUnheard(from, to); unheard {
		b.wait(Wait{Kind: WaitEpochUnheard, Shard: toShard, Node: to.Name, Peer: from.Name, N: int64(from.Valkey.ConfigEpoch), Of: int64(seen)})
		return
	}
	b.add(MigrateSlots{From: fromShard, To: toShard, FromNode: from.Name, ToNode: to.Name, FromRunID: from.Valkey.RunID, ToRunID: to.Valkey.RunID, Slots: r})
}

// oneWay keeps, of open moves between nodes in order, those that may run together: none whose
// source is another kept move's target, or whose target another's source. The first is always
// kept, so a chain or a cycle of open moves still progresses, one move at a time. (A plan's
// moves need no such care: each goes from a shard above its share to one below.)
type oneWay struct{ sources, targets map[string]bool }

func (w *oneWay) admit(from, to string) bool {
	if w.sources == nil {
		w.sources, w.targets = map[string]bool{}, map[string]bool{}
	}
	if w.targets[from] || w.sources[to] {
		return false
	}
	w.sources[from], w.targets[to] = true, true
	return true
}
