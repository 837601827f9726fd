package valkey

import (
	"context"
	"strconv"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestPromotingAPrimaryInPlaceGivesItANewerClaim: a primary elected in place keeps the claim it
// had; another node has made a newer epoch since (here b, by BUMPEPOCH). Promote gives the
// primary an epoch above every one it has heard of, and the survey reports each node's config
// epoch, its own and in the others' views, as CLUSTER NODES has them. Promoted again while its
// epoch is the newest, it keeps it (BUMPEPOCH answers STILL).
func TestPromotingAPrimaryInPlaceGivesItANewerClaim(t *testing.T) {
	p, a, b := twoNodes(t, "127.78.14", machine.SlotRange{Start: 0, End: machine.NumSlots - 1}, machine.SlotRange{Start: 1, End: 0})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.run(ctx, Addr(b.ip), func(ctx context.Context, c vk.Client) error {
		return doAll(ctx, c, bumpEpoch(c)...)
	}); err != nil {
		t.Fatal(err)
	}
	newer := survey(t, p, b).ConfigEpoch
	var seen string
	eventually(t, "a hears of b's epoch", func() bool {
		v := survey(t, p, a)
		for _, k := range v.Known {
			if k.ID == survey(t, p, b).NodeID {
				seen = "a's view gives b epoch " + itoa(k.ConfigEpoch)
				return k.ConfigEpoch == newer
			}
		}
		return false
	}, &seen)
	before := survey(t, p, a)
	if before.ConfigEpoch >= newer {
		t.Fatalf("a's epoch %d is not older than b's %d: the test wants a primary whose claim is not the newest", before.ConfigEpoch, newer)
	}
	if err := p.Promote(ctx, a.ip, before.RunID); err != nil {
		t.Fatal(err)
	}
	after := survey(t, p, a)
	if after.ConfigEpoch <= newer {
		t.Fatalf("promoted in place, a has epoch %d, not above b's %d", after.ConfigEpoch, newer)
	}
	if err := p.Promote(ctx, a.ip, after.RunID); err != nil {
		t.Fatal(err)
	}
	if again := survey(t, p, a).ConfigEpoch; again != after.ConfigEpoch {
		t.Fatalf("promoted again with the newest epoch, a went from %d to %d", after.ConfigEpoch, again)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
