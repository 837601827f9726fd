package valkey

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The survey reads the slots of a primary's keys once it serves no slots (its slots lost to a
// node that is no pod any more, say), on real valkey-server 8.0 and 9.1: the slots CLUSTER
// KEYSLOT names for its keys, and nothing of a primary that serves slots.
func TestTheSurveyReadsTheKeySlotsOfAPrimaryServingNone(t *testing.T) {
	for i, version := range []string{"8.0", "9.1"} {
		t.Run(version, func(t *testing.T) {
			const admin = "keyslotsadmin" // the operator's user cannot take slots away
			s := startClusterServerWith(t, fmt.Sprintf("127.78.72.%d", i+1), valkeyBinaries(t)[version], fmt.Sprintf("user %s on >%s ~* &* +@all\n", admin, testPasswords.Operator))
			p := newTestPool(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			all := []machine.SlotRange{{Start: 0, End: machine.NumSlots - 1}}
			if err := p.AssignSlots(ctx, s.ip, survey(t, p, s).RunID, all); err != nil {
				t.Fatal(err)
			}
			if err := p.OpenWrites(ctx, s.ip, survey(t, p, s).RunID); err != nil {
				t.Fatal(err)
			}
			keys := []string{"a", "b", "c", "{a}2", "key:1", "key:2"}
			app := appClient(t, s)
			// A node says cluster_state:fail for a moment after it took its slots.
			eventually(t, "the node serves its slots", func() bool { return survey(t, p, s).ClusterOK })
			var want []int
			for _, k := range keys {
				slot, err := app.Do(ctx, app.B().ClusterKeyslot().Key(k).Build()).AsInt64()
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, int(slot))
				if err := app.Do(ctx, app.B().Set().Key(k).Value("v").Build()).Error(); err != nil {
					t.Fatal(err)
				}
			}
			if v := survey(t, p, s); v.KeySlots != nil {
				t.Fatalf("a primary serving slots: key slots %v read", v.KeySlots)
			}
			// The node gives its slots up; its keys stay.
			ac, err := vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(s.ip)}, Username: admin, Password: testPasswords.Operator, ForceSingleClient: true, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			defer ac.Close()
			if err := ac.Do(ctx, ac.B().Arbitrary("CLUSTER", "DELSLOTSRANGE", "0", fmt.Sprint(machine.NumSlots-1)).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			v := survey(t, p, s)
			if len(v.Slots) != 0 || v.Keys != int64(len(keys)) {
				t.Fatalf("want a primary serving no slots with %d keys: %+v", len(keys), v)
			}
			var got []int
			for _, r := range v.KeySlots {
				for slot := r.Start; slot <= r.End; slot++ {
					got = append(got, slot)
				}
			}
			slices.Sort(want)
			if want = slices.Compact(want); !slices.Equal(got, want) {
				t.Errorf("key slots %v (%v), want %v", got, v.KeySlots, want)
			}
		})
	}
}
