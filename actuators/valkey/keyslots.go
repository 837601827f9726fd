package valkey

import (
	"context"
	"fmt"
	"strconv"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// keySlotsBatch is how many CLUSTER GETKEYSINSLOT one pipelined round trip sends.
const keySlotsBatch = 1024

// keySlots are the hash slots that hold keys on the node (machine.Valkey.KeySlots), in slot
// order: CLUSTER GETKEYSINSLOT slot 1 for every slot (a key or none), in 16 round trips,
// whatever the key count (Valkey indexes keys by slot). GETKEYSINSLOT rather than
// COUNTKEYSINSLOT: the operator's user already has it (migrations read keys with it). The survey asks it only of a primary that serves no slots
// and holds keys, whose keys' slots the machine weighs against ghosts'.
func keySlots(ctx context.Context, c vk.Client) ([]machine.SlotRange, error) {
	var out []machine.SlotRange
	for from := 0; from < machine.NumSlots; from += keySlotsBatch {
		cmds := make(vk.Commands, 0, keySlotsBatch)
		for s := from; s < min(from+keySlotsBatch, machine.NumSlots); s++ {
			cmds = append(cmds, c.B().ClusterGetkeysinslot().Slot(int64(s)).Count(1).Build())
		}
		for i, r := range c.DoMulti(ctx, cmds...) {
			ks, err := r.AsStrSlice()
			if err != nil {
				return nil, fmt.Errorf("CLUSTER GETKEYSINSLOT %s: %w", strconv.Itoa(from+i), err)
			}
			if len(ks) == 0 {
				continue
			}
			s := from + i
			if k := len(out) - 1; k >= 0 && out[k].End == s-1 {
				out[k].End = s
				continue
			}
			out = append(out, machine.SlotRange{Start: s, End: s})
		}
	}
	return out, nil
}
