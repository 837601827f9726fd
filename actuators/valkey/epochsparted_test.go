package valkey

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// epochsParted waits until the nodes at ips are ready for a slot move as the machine requires
// one (machine/sharedepoch.go): no two primaries share a config epoch, and every node has heard
// every other's current epoch. A cluster formed by ADDSLOTS starts with every primary on epoch
// 0; Valkey parts them over a few seconds of gossip, and a source that takes its new epoch
// while a hand-over has both ends claiming a slot overrules the target, which then deletes its
// keys there. The machine waits for this before it decides a move; tests that call MigrateSlots
// themselves wait here, so they run the actuator under the conditions it is given in product.
func epochsParted(t testing.TB, ctx context.Context, p *Pool, ips ...string) {
	t.Helper()
	var seen string
	eventuallyWithin(t, 30*time.Second, 100*time.Millisecond, "primaries on distinct config epochs that every node has heard", func() bool {
		own := map[string]uint64{} // node ID to the epoch it gives itself
		primaryOn := map[uint64]string{}
		var views []ClusterView
		for _, ip := range ips {
			v, err := p.ClusterNodes(ctx, ip)
			if err != nil {
				seen = fmt.Sprintf("%s: %v", ip, err)
				return false
			}
			me, ok := v.Myself()
			if !ok {
				seen = ip + " does not list itself"
				return false
			}
			own[me.ID] = me.ConfigEpoch
			if me.Primary {
				if other, shared := primaryOn[me.ConfigEpoch]; shared {
					seen = fmt.Sprintf("%s and %s are both on epoch %d", other, ip, me.ConfigEpoch)
					return false
				}
				primaryOn[me.ConfigEpoch] = ip
			}
			views = append(views, v)
		}
		for i, v := range views {
			for _, n := range v.Nodes {
				if e, listed := own[n.ID]; listed && n.ConfigEpoch != e {
					seen = fmt.Sprintf("%s gives %s:%d epoch %d, it has %d", ips[i], n.IP, n.Port, n.ConfigEpoch, e)
					return false
				}
			}
		}
		return true
	}, &seen)
}
