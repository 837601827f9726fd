package machine

import (
	"reflect"
	"sort"
	"testing"

	"pgregory.net/rapid"
)

// balanceBySlot is balance as first written, slot by slot over arrays of NumSlots: the
// reference the run-wise balance must agree with.
func balanceBySlot(owners []ownedSlot, n int) []slotMove {
	var owner [NumSlots]int
	for i := range owner {
		owner[i] = -1
	}
	for _, o := range owners {
		for s := max(o.Start, 0); s <= min(o.End, NumSlots-1); s++ {
			owner[s] = o.shard
		}
	}
	var homeOf [NumSlots]int // the shard whose range in the even split holds the slot
	share := make([]int, n)
	for shard, r := range SlotPlan(n) {
		share[shard] = r.End - r.Start + 1
		for s := r.Start; s <= r.End; s++ {
			homeOf[s] = shard
		}
	}
	quota := func(shard int) int {
		if shard < n {
			return share[shard]
		}
		return 0
	}
	home := func(s, shard int) bool { return homeOf[s] == shard }
	// Each shard keeps its home slots (its range in the even split) first, then its lowest
	// others, up to its share.
	kept := map[int]int{}
	keep := [NumSlots]bool{}
	for _, homeFirst := range []bool{true, false} {
		for s, o := range owner {
			if o >= 0 && !keep[s] && home(s, o) == homeFirst && kept[o] < quota(o) {
				kept[o]++
				keep[s] = true
			}
		}
	}
	// The rest goes to the shards below their share: first what lies in a receiver's home
	// range, then in slot order.
	to := [NumSlots]int{}
	for s := range to {
		to[s] = -1
	}
	for s := range to {
		if r := homeOf[s]; !keep[s] && kept[r] < quota(r) {
			to[s] = r
			kept[r]++
		}
	}
	r := 0
	for s := range to {
		if keep[s] || to[s] >= 0 {
			continue
		}
		for r < n && kept[r] >= quota(r) {
			r++
		}
		if r == n {
			break
		}
		to[s] = r
		kept[r]++
	}
	var moves []slotMove
	for s := 0; s < NumSlots; s++ {
		if to[s] < 0 {
			continue
		}
		from := owner[s]
		if k := len(moves) - 1; k >= 0 && moves[k].to == to[s] && moves[k].from == from && moves[k].End == s-1 {
			moves[k].End = s
			continue
		}
		moves = append(moves, slotMove{SlotRange{s, s}, from, to[s]})
	}
	return moves
}

// The run-wise balance plans exactly what the slot-by-slot one does, for owners as they come
// (sorted by start, overlapping, beyond the slot space, of shards beyond n or none) and any
// shard count.
func TestBalanceMatchesSlotBySlot(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 7).Draw(rt, "n")
		bound := rapid.SampledFrom([]int{NumSlots, 64}).Draw(rt, "bound")
		var owners []ownedSlot
		for i := rapid.IntRange(0, 12).Draw(rt, "owners"); i > 0; i-- {
			start := rapid.IntRange(-2, bound+2).Draw(rt, "start")
			end := start + rapid.IntRange(-1, bound).Draw(rt, "length")
			if rapid.Bool().Draw(rt, "to the end") {
				end = NumSlots - 1
			}
			owners = append(owners, ownedSlot{SlotRange{start, end}, rapid.IntRange(0, 8).Draw(rt, "shard")})
		}
		if rapid.Bool().Draw(rt, "sorted") {
			sort.SliceStable(owners, func(i, j int) bool { return owners[i].Start < owners[j].Start })
		}
		got, want := balance(owners, n), balanceBySlot(owners, n)
		if !reflect.DeepEqual(got, want) {
			rt.Fatalf("owners %v over %d shards:\nrun-wise   %v\nslot-wise  %v", owners, n, got, want)
		}
	})
}

// The plans the operator meets: the even split from nothing, and every shard count to every
// other from an even split.
func TestBalanceMatchesSlotBySlotBetweenSplits(t *testing.T) {
	for from := 0; from <= 6; from++ {
		var owners []ownedSlot
		for s, r := range SlotPlan(max(from, 1)) {
			if from > 0 {
				owners = append(owners, ownedSlot{r, s})
			}
		}
		for to := 1; to <= 6; to++ {
			if got, want := balance(owners, to), balanceBySlot(owners, to); !reflect.DeepEqual(got, want) {
				t.Errorf("%d to %d shards: run-wise %v, slot-wise %v", from, to, got, want)
			}
		}
	}
}
