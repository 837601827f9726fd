package operatorsuite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestTheOperatorStoppedMidMigrationFinishesIt: 3 → 4 shards of 2 pods holding 300,000 keys,
// a cluster client writing WAIT-acknowledged keys throughout; the operator is stopped in the
// middle of the slot migration (its context cancelled inside the step, nothing cleaned up, as a
// crash leaves it) and a new one started:
//   - 8.0, classic: stopped once the new shard has received keys and serves only part of its
//     slots (slots are open: importing on the target, migrating on the sources);
//   - 9.1, Atomic Slot Migration: stopped as soon as a source has a migration job, before the
//     operator could see it end.
//
// The state is still Resharding when it stops; after the restart the migration completes, every
// shard serves its share, valkey-cli --cluster check finds no open slot and every slot covered,
// every key reads back, no acknowledged write is lost.
func TestTheOperatorStoppedMidMigrationFinishesIt(t *testing.T) {
	for _, image := range []string{"valkey/valkey:8.0", "valkey/valkey:9.1"} {
		t.Run(image[strings.LastIndex(image, ":")+1:], func(t *testing.T) { stoppedMidMigration(t, image) })
	}
}

func stoppedMidMigration(t *testing.T, image string) {
	ns, ctx, vc, op := steadyShardsWithOperator(t, "mid", 3, 2, image, 10*time.Minute)
	app := clusterClient(t, clientServiceAddr(t, vc), password(t, vc))
	const keys = 300_000
	writeKeys(ctx, t, app, "mid:", keys)
	sources := map[string]vk.Client{}
	for _, sh := range vc.Status.Shards {
		for _, n := range vc.Status.Nodes {
			if n.Pod == sh.Primary {
				sources[n.Pod] = operatorClient(t, vc, n.IP)
			}
		}
	}
	w := startWriter(ctx, app, "mid")
	vc.Spec.Shards = 4
	update(t, ctx, vc)

	atomic := strings.HasSuffix(image, ":9.1")
	var caught string
	for deadline := time.Now().Add(3 * time.Minute); caught == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if atomic {
			caught = migrationJob(ctx, sources)
		} else {
			caught = partlyMoved(ctx, t, ns, vc)
		}
	}
	if caught == "" {
		t.Fatalf("no migration seen within 3 minutes:\n%s", summary(get(t, ns, "mid")))
	}
	op.stop(t)
	mid := get(t, ns, "mid")
	t.Logf("operator stopped: %s; state %s, progress %q", caught, mid.Status.State, mid.Status.Progress)
	if mid.Status.State != v1alpha1.StateResharding {
		t.Fatalf("the operator was not stopped mid-resharding (state %s): %s", mid.Status.State, caught)
	}
	for _, c := range sources {
		c.Close()
	}

	startOperator(t, "")
	vc = waitFor(t, ns, "mid", 5*time.Minute, "Steady with 4 shards, slots balanced", func(vc *v1alpha1.ValkeyCluster) bool {
		if !steadyCluster(4, 2)(vc) {
			return false
		}
		for _, sh := range vc.Status.Shards {
			if slotsIn(sh.Slots) != 4096 {
				return false
			}
		}
		return true
	})
	lost, acked := w.lost(t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)))
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost:\n%s", lost, acked, summary(vc))
	}
	clusterCheck(t, vc, vc.Status.Nodes[0].IP)
	readKeys(ctx, t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "mid:", keys)
	t.Logf("%s: finished after the restart; %d writes acknowledged, none lost, %d failed and retried", image, acked, w.failures.Load())
}

// partlyMoved says what it saw when the new shard's primary holds keys and serves part of its
// slots (a classic migration under way), "" otherwise.
func partlyMoved(ctx context.Context, t *testing.T, ns string, vc *v1alpha1.ValkeyCluster) string {
	cur := get(t, ns, vc.Name)
	for _, n := range cur.Status.Nodes {
		if n.Pod != "mid-s3-0" || n.IP == "" {
			continue
		}
		// Not operatorClient: the pod may have its IP before Valkey listens.
		c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{n.IP + ":6379"}, Username: "operator", Password: secretKey(t, cur, kube.KeyOperatorPassword),
			DisableCache: true, ForceSingleClient: true})
		if err != nil {
			return ""
		}
		defer c.Close()
		keys, err := c.Do(ctx, c.B().Dbsize().Build()).AsInt64()
		if err != nil || keys == 0 {
			return ""
		}
		text, err := c.Do(ctx, c.B().ClusterNodes().Build()).ToString()
		if err != nil {
			return ""
		}
		for _, line := range strings.Split(text, "\n") {
			if !strings.Contains(line, "myself") {
				continue
			}
			var ranges, open []string
			for _, f := range strings.Fields(line)[8:] {
				if strings.HasPrefix(f, "[") {
					open = append(open, f)
				} else {
					ranges = append(ranges, f)
				}
			}
			owned := 0
			if len(ranges) > 0 {
				owned = slotsIn(strings.Join(ranges, ","))
			}
			if len(open) > 0 && owned < 4096 {
				return fmt.Sprintf("mid-s3-0 holds %d keys and serves %d of its 4096 slots, %d slots open (%s …)", keys, owned, len(open), open[0])
			}
		}
	}
	return ""
}

// migrationJob names a source's Atomic Slot Migration job, "" while none has one. The
// operator grants itself CLUSTER GETSLOTMIGRATIONS on a source right before it starts one.
func migrationJob(ctx context.Context, sources map[string]vk.Client) string {
	for name, c := range sources {
		arr, err := c.Do(ctx, c.B().Arbitrary("CLUSTER", "GETSLOTMIGRATIONS").Build()).ToArray()
		if err == nil && len(arr) > 0 {
			return fmt.Sprintf("%s has %d migration job(s)", name, len(arr))
		}
	}
	return ""
}

// writeKeys writes prefix0 … prefix<n-1>, each holding its own name, pipelined.
func writeKeys(ctx context.Context, t *testing.T, c vk.Client, prefix string, n int) {
	t.Helper()
	const batch = 2000
	for i := 0; i < n; i += batch {
		cmds := make(vk.Commands, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			key := fmt.Sprintf("%s%d", prefix, j)
			cmds = append(cmds, c.B().Set().Key(key).Value(key).Build())
		}
		for _, r := range c.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				t.Fatalf("writing %s keys: %v", prefix, err)
			}
		}
	}
}

// readKeys reads back what writeKeys wrote, pipelined; a batch that meets an error (a moment
// of redirection after a move) is read again for up to 15 s.
func readKeys(ctx context.Context, t *testing.T, c vk.Client, prefix string, n int) {
	t.Helper()
	const batch = 2000
	for i := 0; i < n; i += batch {
		deadline := time.Now().Add(15 * time.Second)
	again:
		cmds := make(vk.Commands, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			cmds = append(cmds, c.B().Get().Key(fmt.Sprintf("%s%d", prefix, j)).Build())
		}
		for k, r := range c.DoMulti(ctx, cmds...) {
			key := fmt.Sprintf("%s%d", prefix, i+k)
			got, err := r.ToString()
			if err != nil && !vk.IsValkeyNil(err) && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
				goto again
			}
			if err != nil || got != key {
				t.Fatalf("reading %s: %q, %v", key, got, err)
			}
		}
	}
}
