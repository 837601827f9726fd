package operatorsuite

import (
	"context"
	"fmt"
	"strconv"
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

// TestASlotLeftOpenByHandIsFinishedAndMovedHome: a Steady Cluster (8.0, 3 shards) where a slot
// holding keys is left open between two shards, half its keys moved, as an interrupted classic
// migration (by valkey-cli or an abandoned plan) leaves it. The operator sees the open slot in
// its survey, reshards (the history says why), finishes the migration towards where it was going
// (the keys already there would otherwise be stranded), then moves the slot home. Afterwards
// valkey-cli --cluster check finds no open slot, the shards serve their even split and every key
// reads back.
func TestASlotLeftOpenByHandIsFinishedAndMovedHome(t *testing.T) {
	ns, ctx, vc := steadyShards(t, "ajar", 3, 1, "valkey/valkey:8.0", 6*time.Minute)
	app := clusterClient(t, clientServiceAddr(t, vc), password(t, vc))
	const keys = 200
	writeKeys(ctx, t, app, "{ajar}:", keys) // one hash tag: every key in one slot
	slot, err := app.Do(ctx, app.B().ClusterKeyslot().Key("{ajar}:0").Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	owner := -1
	for i, sh := range vc.Status.Shards {
		lo, hi, _ := strings.Cut(sh.Slots, "-")
		if a, b := atoi(t, lo), atoi(t, hi); int(slot) >= a && int(slot) <= b {
			owner = i
		}
	}
	if owner < 0 {
		t.Fatalf("no shard serves slot %d: %+v", slot, vc.Status.Shards)
	}
	ipOf := func(shard int) string {
		for _, n := range vc.Status.Nodes {
			if n.Pod == vc.Status.Shards[shard].Primary {
				return n.IP
			}
		}
		t.Fatalf("no IP for shard %d's primary", shard)
		return ""
	}
	src, dst := operatorClient(t, vc, ipOf(owner)), operatorClient(t, vc, ipOf((owner+1)%3))
	id := func(c vk.Client) string {
		v, err := c.Do(ctx, c.B().ClusterMyid().Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	must := func(r vk.ValkeyResult) {
		t.Helper()
		if err := r.Error(); err != nil && !vk.IsValkeyNil(err) {
			t.Fatal(err)
		}
	}
	s := fmt.Sprint(slot)
	must(dst.Do(ctx, dst.B().Arbitrary("CLUSTER", "SETSLOT", s, "IMPORTING", id(src)).Build()))
	must(src.Do(ctx, src.B().Arbitrary("CLUSTER", "SETSLOT", s, "MIGRATING", id(dst)).Build()))
	ks, err := src.Do(ctx, src.B().ClusterGetkeysinslot().Slot(slot).Count(keys).Build()).AsStrSlice()
	if err != nil || len(ks) != keys {
		t.Fatalf("slot %d holds %d keys (%v), want %d", slot, len(ks), err, keys)
	}
	args := append([]string{ipOf((owner + 1) % 3), "6379", "", "0", "5000", "AUTH2", "operator", secretKey(t, vc, kube.KeyOperatorPassword), "KEYS"}, ks[:keys/2]...)
	must(src.Do(ctx, src.B().Arbitrary("MIGRATE").Args(args...).Build()))

	vc = waitFor(t, ns, "ajar", 3*time.Minute, "resharded back to the even split", func(vc *v1alpha1.ValkeyCluster) bool {
		resharded := false
		for _, h := range vc.Status.History {
			resharded = resharded || (h.To == v1alpha1.StateResharding && strings.Contains(h.Message, "left open"))
		}
		home := []string{"0-5460", "5461-10921", "10922-16383"}
		for i, sh := range vc.Status.Shards {
			if sh.Slots != home[i] {
				return false
			}
		}
		return resharded && steadyCluster(3, 1)(vc)
	})
	clusterCheck(t, vc, vc.Status.Nodes[0].IP)
	readKeys(ctx, t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "{ajar}:", keys)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

// readKeys reads back what writeKeys wrote, pipelined (readAll's one read per key is too slow
// for 300,000 keys); a batch that meets an error (a moment of redirection after a move) is read
// again for up to 15 s. Used only after the cluster is Steady and valkey-cli check is clean:
// readAll's per-key reads are what the tests that read right after a heal use (a pipelined
// read there met "the slot has no valkey node" for 15 s in CI, the client's slot map stale).
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
