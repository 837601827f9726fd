package valkey

import (
	"context"
	"fmt"
	"strconv"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// A hand-over can be overruled by a config-epoch collision: the source, bumped to a newer
// epoch while it still served the slots (two nodes found sharing an epoch, the one with the
// smaller ID takes the next), gossips its claim after the target took the slots with its own,
// older epoch; the target's view gives them back to the source; then the source is told
// SETSLOT NODE and disclaims them. Nobody serves them and nothing mends it: the source claims
// them no more, the target believes the source does. Found in CI (a removal waited for shard
// 0 to serve every slot, a resharding re-assigned the same slots for good). The target takes
// them back with a new epoch, but not their keys: a node whose view gives a slot it holds keys
// in to another node deletes them ("Deleting keys in dirty slot", clusterUpdateSlotsConfigWith;
// found in CI, a key lost in a resharding). So the machine moves no slot while the source's
// claim could be the newer (machine/sharedepoch.go), and a migration that meets the state
// anyway fails and says what was lost.

// disclaims checks that the node at ownerIP, which a view names as serving slots, neither
// serves them in its own view nor holds a key in them. An error says which and why, or that the
// owner could not be asked (then nothing may be taken from it).
func (p *Pool) disclaims(ctx context.Context, ownerIP string, slots []int) error {
	return p.runFor(ctx, Addr(ownerIP), p.bulkTimeout(len(slots)), func(ctx context.Context, c vk.Client) error {
		v, err := clusterView(ctx, c)
		if err != nil {
			return err
		}
		me, _ := v.Myself()
		for _, r := range me.Slots {
			for _, s := range slots {
				if s >= r.Start && s <= r.End {
					return fmt.Errorf("it serves slot %d", s)
				}
			}
		}
		cmds := make(vk.Commands, 0, len(slots))
		for _, s := range slots {
			cmds = append(cmds, c.B().ClusterGetkeysinslot().Slot(int64(s)).Count(1).Build())
		}
		for i, r := range c.DoMulti(ctx, cmds...) {
			keys, err := r.AsStrSlice()
			if err != nil {
				return fmt.Errorf("GETKEYSINSLOT %d: %w", slots[i], err)
			}
			if len(keys) > 0 {
				return fmt.Errorf("it no longer serves slot %d but holds keys in it", slots[i])
			}
		}
		return nil
	})
}

// takeBack makes the node on c serve slots its view gives to a node that disclaims them
// (SETSLOT NODE to itself), then gives it a config epoch newer than any it knows (BUMPEPOCH),
// so that its claim overrules the stale one wherever gossip carries it.
func takeBack(ctx context.Context, c vk.Client, myID string, slots []int) error {
	if len(slots) == 0 {
		return nil
	}
	cmds := make(vk.Commands, 0, len(slots)+2)
	for _, s := range slots {
		cmds = append(cmds, c.B().Arbitrary("CLUSTER", "SETSLOT", strconv.Itoa(s), "NODE", myID).Build())
	}
	return doAll(ctx, c, append(cmds, bumpEpoch(c)...)...)
}

// TakeSlotsOver makes the node at podIP (process runID) claim ranges with a config epoch newer
// than every one it knows: CLUSTER SETSLOT NODE to itself for each slot, then CLUSTER BUMPEPOCH.
// The node at fromIP, which serves them, must still be process fromRunID (the machine's
// TakeSlotsOver: a deposed node whose keys there are off the line); on hearing the newer claim
// it stops serving them.
func (p *Pool) TakeSlotsOver(ctx context.Context, podIP, runID, fromIP, fromRunID string, ranges []machine.SlotRange) error {
	if err := p.Alive(ctx, fromIP, fromRunID); err != nil {
		return fmt.Errorf("the node the slots are taken from: %w", err)
	}
	return p.guardFor(ctx, podIP, runID, p.bulkTimeout(machine.SlotCount(ranges)), func(ctx context.Context, c vk.Client) error {
		v, err := clusterView(ctx, c)
		if err != nil {
			return err
		}
		me, _ := v.Myself()
		var slots []int
		for _, r := range ranges {
			for s := r.Start; s <= r.End; s++ {
				slots = append(slots, s)
			}
		}
		return takeBack(ctx, c, me.ID, slots)
	})
}

// bumpEpoch gives the node on c a config epoch newer than any it knows, unless its own is the
// newest already (CLUSTER BUMPEPOCH answers STILL then). A node started from an older users'
// file lacks BUMPEPOCH: it is granted first (bumps are rare).
func bumpEpoch(c vk.Client) vk.Commands {
	return vk.Commands{
		c.B().AclSetuser().Username(UserOperator).Rule("+cluster|bumpepoch").Build(),
		c.B().Arbitrary("CLUSTER", "BUMPEPOCH").Build(),
	}
}
