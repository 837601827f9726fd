package operatorsuite

import (
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestSentinelTopologyFailsOverAPartitionedPrimary: the primary's pod is cut off from every
// other address (nftables drops its traffic both ways: the sentinels, the replicas, the
// application and the operator lose it at once, while its process runs on). The sentinels'
// quorum fails it over and the operator records their pick with its epoch. A Sentinel-aware
// client (valkey-go, not the operator's code) writes with WAIT 1 before, during and after, and
// finds the new primary through the sentinels. After the heal the old primary rejoins as a
// replica of the new one (what it took alone was never acknowledged: WAIT 1 cannot succeed on
// a primary no replica reaches), and every acknowledged write reads back: through the client,
// and from every data node directly. On Valkey 8.0 and 9.1.
func TestSentinelTopologyFailsOverAPartitionedPrimary(t *testing.T) {
	for _, image := range []string{"valkey/valkey:8.0", "valkey/valkey:9.1"} {
		t.Run(image, func(t *testing.T) { sentinelPartition(t, image) })
	}
}

func sentinelPartition(t *testing.T, image string) {
	ns, steady, pass := steadySentinels(t, image)
	ctx := ctxFor(t, 6*time.Minute)
	app := sentinelClient(t, ns, pass)
	const n = 200
	if err := setAndWait(ctx, app, "before-", n, 1); err != nil {
		t.Fatalf("writing through the sentinels: %v\n%s", err, summary(get(t, ns, "watched")))
	}
	w := startSentinelWriter(ctx, app)
	time.Sleep(2 * time.Second)

	if err := cl.IsolatePod(mustAddr(t, steady, steady.Status.Primary)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Heal() })
	after := sentinelPromotionRecorded(t, ns, steady.Status.Primary)
	time.Sleep(3 * time.Second) // the writer goes on against the new primary

	if err := cl.Heal(); err != nil {
		t.Fatal(err)
	}
	back := backAsReplica(t, ns, steady.Status.Primary, after.Status.Primary)
	keys, gap := w.stop()
	t.Logf("%d writes acknowledged by WAIT 1 through the partition; longest gap %s", len(keys), gap.Round(time.Millisecond))
	if len(keys) < 10 {
		t.Fatalf("only %d writes acknowledged: the writer did not find the new primary\n%s", len(keys), summary(back))
	}
	readBack(t, ctx, app, keys, back)
	everyNodeHolds(t, ns, pass, "before-", n)
	for _, node := range back.Status.Nodes {
		if node.Pod != back.Status.Primary && node.Role == v1alpha1.NodeRolePrimary {
			t.Fatalf("%s is a primary beside %s after the heal:\n%s", node.Pod, back.Status.Primary, summary(back))
		}
	}
}
