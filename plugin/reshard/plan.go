package reshard

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// Owned parses the slots each shard's primary serves, as status reports them ("0-5460",
// "0-99,102-5460", "7"), by shard index.
func Owned(shards []v1beta1.ShardStatus) (map[int][]machine.SlotRange, error) {
	owned := map[int][]machine.SlotRange{}
	for _, sh := range shards {
		if sh.Slots == "" {
			continue
		}
		for _, part := range strings.Split(sh.Slots, ",") {
			lo, hi, isRange := strings.Cut(part, "-")
			if !isRange {
				hi = lo
			}
			start, err1 := strconv.Atoi(lo)
			end, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || start < 0 || end < start || end >= machine.NumSlots {
				return nil, fmt.Errorf("status.shards[%d].slots: %q is not a slot range", sh.Index, part)
			}
			owned[int(sh.Index)] = append(owned[int(sh.Index)], machine.SlotRange{Start: start, End: end})
		}
	}
	return owned, nil
}

// Plan is what balancing vc's slots over n shards moves.
type Plan struct {
	From, To int // shard counts
	Moves    []machine.SlotMove
}

// Slots is how many slots the plan moves.
func (p Plan) Slots() int {
	total := 0
	for _, m := range p.Moves {
		total += m.End - m.Start + 1
	}
	return total
}

// PlanFor is the machine's plan for vc's shards, as status reports their slots, balanced over
// n shards.
func PlanFor(vc *v1beta1.ValkeyCluster, n int) (Plan, error) {
	owned, err := Owned(vc.Status.Shards)
	if err != nil {
		return Plan{}, err
	}
	return Plan{From: len(vc.Status.Shards), To: n, Moves: machine.PlanSlotMoves(owned, n)}, nil
}

// Write prints the plan as a table of moves, one per range, with a summary line.
func (p Plan) Write(w io.Writer) error {
	if len(p.Moves) == 0 {
		_, err := fmt.Fprintf(w, "Slots balanced over %d shards: nothing to move.\n", p.To)
		return err
	}
	head := fmt.Sprintf("Plan for %d → %d shards: %d of %d slots move, with their keys.", p.From, p.To, p.Slots(), machine.NumSlots)
	if p.From == p.To {
		head = fmt.Sprintf("Plan over %d shards: %d of %d slots still move, with their keys.", p.To, p.Slots(), machine.NumSlots)
	}
	if _, err := fmt.Fprintf(w, "%s\n\n", head); err != nil {
		return err
	}
	t := output.NewTable("FROM", "TO", "SLOTS", "COUNT")
	for _, m := range p.Moves {
		from := "unassigned"
		if m.From >= 0 {
			from = "shard " + strconv.Itoa(m.From)
		}
		slots := strconv.Itoa(m.Start)
		if m.End > m.Start {
			slots += "-" + strconv.Itoa(m.End)
		}
		t.Row(from, "shard "+strconv.Itoa(m.To), slots, strconv.Itoa(m.End-m.Start+1))
	}
	_, err := t.WriteTo(w)
	return err
}
