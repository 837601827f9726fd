package sentinelreal

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestRealSentinelResetForgetsARenewedSentinelsOldID, on real valkey-sentinel 8.0 and 9.1: a
// sentinel re-created without its file (a new id, on a new address) is known to the others
// beside its old id, which stays a voter for good (num-other-sentinels 3 with three
// sentinels). The machine's SentinelReset (SENTINEL RESET through actuators/valkey) makes one
// forget it: the sentinel finds the live ones again through their hellos and knows exactly
// two, still naming the primary, while the other keeps the stale id until it is reset too.
func TestRealSentinelResetForgetsARenewedSentinelsOldID(t *testing.T) {
	for vi, version := range []string{"8.0", "9.1"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			octet := 102 + vi
			w := newRealSentinelWorld(t, binDir(t, version), octet)
			settings := machine.SentinelSettings{Quorum: 2, DownAfterMillis: 5000, FailoverTimeoutMillis: 60000, ParallelSyncs: 1}
			monitor := func(s machine.Sentinel) {
				t.Helper()
				if err := w.pool.SentinelMonitor(ctx, s.IP, s.ID, w.servers[0].IP, settings, ""); err != nil {
					t.Fatal(err)
				}
			}
			o, _ := w.Observe(ctx)
			for _, s := range o.Sentinels {
				monitor(s)
			}
			peers := func(want ...int) func(machine.Observation) bool {
				return func(o machine.Observation) bool {
					for i, n := range want {
						if s := o.Sentinels[i]; !s.Monitoring || s.PrimaryIP != w.servers[0].IP || s.Peers != n {
							return false
						}
					}
					return true
				}
			}
			if err := w.Await(ctx, "every sentinel knowing the two others", peers(2, 2, 2)); err != nil {
				t.Fatal(err)
			}

			// Sentinel 2 is re-created from a template (no file: a new id) on a new address.
			w.sentinels[2].Kill()
			ip := fmt.Sprintf("127.237.%d.%d", octet, 21)
			p := &proc{Proc: newFixedPortProc(t, "sentinel-2-renewed", ip, filepath.Join(t.TempDir(), "sentinel-2-renewed"), valkey.SentinelPort), bin: w.sentinels[2].bin}
			users := []string{"user default on nopass ~* &* +@all", "user " + valkey.UserOperator + " on nopass ~* &* +@all"}
			p.args = []string{writeConf(t, p.Dir, "sentinel.conf", append([]string{"bind " + ip, "port " + strconv.Itoa(valkey.SentinelPort),
				"bind-source-addr " + ip, "sentinel announce-ip " + ip, "protected-mode no", "dir " + p.Dir, "logfile " + p.log()}, users...))}
			p.start(t)
			t.Cleanup(p.Kill)
			w.sentinels[2] = p
			var renewed machine.Sentinel
			if err := w.Await(ctx, "the renewed sentinel answering", func(machine.Observation) bool {
				var err error
				renewed, err = w.pool.SurveySentinel(ctx, ip)
				return err == nil
			}); err != nil {
				t.Fatal(err)
			}
			monitor(renewed)
			if err := w.Await(ctx, "sentinels 0 and 1 knowing the renewed one beside its old id", peers(3, 3)); err != nil {
				t.Fatal(err)
			}

			o, _ = w.Observe(ctx)
			reset := machine.SentinelReset{SentinelTarget: machine.SentinelTargetOf(o.Sentinels[0])}
			if err := w.Apply(ctx, reset); err != nil {
				t.Fatal(err)
			}
			if err := w.Await(ctx, "sentinel 0 knowing exactly the two live ones after its reset, sentinel 1 still the stale id", peers(2, 3)); err != nil {
				t.Fatal(err)
			}
		})
	}
}
