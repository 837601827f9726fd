package machine

// leavingShards is how many shards the objects keep when the machine wants only from: in
// cluster mode, the shards beyond it that the objects run stay until their pods have left the
// cluster bus. The scale-down's last check (CheckScaleDown) refuses to delete a pod, and its
// claim, that does not answer, is still in the cluster or holds keys; deciding the shrink
// regardless would be refused on every turn and hold back every action decided after it.
// Each pod of such a shard that answers, serves no slot and holds no key is removed from the
// bus (RemoveNode) once no staying node's view still gives it slots; one that does not answer or holds keys is waited for, with the reason (a
// shard's slots are moved away by the state's own steps).
func (d *decider) leavingShards(from int, b *actionList) int {
	have := d.obs.Objects.Shards
	if d.v.spec.Mode != ModeCluster || have <= from {
		return from
	}
	keep := from
	stale := ""
	if d.p.State != Bootstrapping {
		// A bootstrap serves nothing yet: a view that still gives a leaving node slots is
		// cleared by removing it, and the slots are then assigned anew.
		stale = d.staleSlotViews(from)
	}
	for s := from; s < min(have, d.v.shardCount()); s++ {
		for _, n := range d.v.shard(s) {
			empty := n.Reachable && len(n.Valkey.Slots) == 0 && n.Valkey.Keys == 0
			switch {
			case empty && leftTheBus(n):
				continue
			case empty && stale != "":
				b.wait(Wait{Kind: WaitStaleSlotViews, Detail: stale})
			case empty:
				b.add(RemoveNode{Target: Target{Shard: s, Node: n.Name}})
			case !n.Reachable:
				b.wait(Wait{Kind: WaitLeavingNodeNotAnswering, Shard: s, Node: n.Name})
			case len(n.Valkey.Slots) == 0:
				b.wait(Wait{Kind: WaitLeavingNodeHoldsKeys, Shard: s, Node: n.Name, N: n.Valkey.Keys})
			}
			keep = have
		}
	}
	return keep
}

// leavingSlotServer is the node of shard s, one the objects no longer want, that serves its
// slots (nil: none answers as such): a bootstrap moves them from it (MigrateSlots) before the
// shard leaves, as assigning them anew would be refused while it serves them.
func (d *decider) leavingSlotServer(s int) *Node {
	for _, n := range d.v.shard(s) {
		if usable(n) && n.Valkey.Role == RolePrimary && len(n.Valkey.Slots) > 0 {
			return n
		}
	}
	return nil
}
