package operatorsuite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestAClusterReCreatedOnKeptClaimsKeepsEveryKey: a Cluster topology (3 shards of 2 pods,
// Durable, the default image) holding WAIT-acknowledged keys is deleted, its claims kept (a
// GitOps re-sync, a namespace restore), shard 1's pod 0 loses its claim, and the same manifest
// is applied again. The operator adopts the cluster the volumes hold instead of forming a new
// one: every node with a kept claim comes back as the same node (CLUSTER MYID), every shard
// serves the slots it served, shard 1 is elected from the pod that kept its data (never from the
// empty pod 0, which would wipe the shard), and every key reads back through a cluster client;
// valkey-cli --cluster check is clean.
func TestAClusterReCreatedOnKeptClaimsKeepsEveryKey(t *testing.T) {
	const name, keys = "kept", 3000
	ns, ctx, vc := steadyShards(t, name, 3, 2, "", 8*time.Minute)
	writeAcked(ctx, t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "kept:", keys)
	ids := nodeIDs(ctx, t, vc)
	var slots []string
	for _, sh := range vc.Status.Shards {
		slots = append(slots, sh.Slots)
	}

	deleteKeepingClaims(t, ctx, ns, name, 6)
	lost := name + "-s1-0"
	deleteClaim(t, ctx, ns, "data-"+lost)
	again := newCluster(ns, name, v1alpha1.TopologyCluster, 2)
	again.Spec.Shards = 3
	if err := k.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, name, 4*time.Minute, "Steady again on the kept claims", steadyCluster(3, 2))
	clusterCheck(t, vc, vc.Status.Nodes[0].IP)
	readAll(ctx, t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "kept:", keys)

	after := nodeIDs(ctx, t, vc)
	for pod, id := range ids {
		if pod != lost && after[pod] != id {
			t.Errorf("%s came back as node %s, was %s: the cluster on its volume was not adopted", pod, after[pod], id)
		}
	}
	for i, sh := range vc.Status.Shards {
		if i >= len(slots) || sh.Slots != slots[i] {
			t.Errorf("shard %d serves %q, served %q before the re-creation", i, sh.Slots, slots[min(i, len(slots)-1)])
		}
		if sh.Primary == lost {
			t.Errorf("shard %d's primary is %s, the pod whose claim was lost", i, lost)
		}
	}
	elected := false
	for _, h := range vc.Status.History {
		elected = elected || (h.Event == "bootstrap-elected" && strings.Contains(h.Message, name+"-s1-1"))
	}
	if !elected {
		t.Errorf("no bootstrap-elected naming %s-s1-1 in the history:\n%+v", name, vc.Status.History)
	}
}

// nodeIDs is each pod's cluster node id, asked with the operator's credentials.
func nodeIDs(ctx context.Context, t *testing.T, vc *v1alpha1.ValkeyCluster) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, n := range vc.Status.Nodes {
		c := operatorClient(t, vc, n.IP)
		id, err := c.Do(ctx, c.B().ClusterMyid().Build()).ToString()
		c.Close()
		if err != nil {
			t.Fatalf("CLUSTER MYID on %s: %v", n.Pod, err)
		}
		ids[n.Pod] = id
	}
	if len(ids) == 0 {
		t.Fatal("no nodes in status")
	}
	return ids
}

// TestAClusterReCreatedWithFewerShardsKeepsEveryKey: a Cluster topology of 3 shards holding
// WAIT-acknowledged keys is deleted, its claims kept, and applied again asking for 2 shards. The
// claims of shard 2 hold a third of the keys: the first bootstrap starts all three shards on
// their claims (bootstrap-complete says shard 2 runs beyond the spec, for its kept volumes), and
// from Steady the resharding to 2 moves shard 2's slots, keys and all, before it removes the
// shard. Every key reads back through a cluster client; valkey-cli --cluster check is clean.
func TestAClusterReCreatedWithFewerShardsKeepsEveryKey(t *testing.T) {
	const name, keys = "fewer", 3000
	ns, ctx, vc := steadyShards(t, name, 3, 2, "", 10*time.Minute)
	writeAcked(ctx, t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "fewer:", keys)

	deleteKeepingClaims(t, ctx, ns, name, 6)
	again := newCluster(ns, name, v1alpha1.TopologyCluster, 2)
	again.Spec.Shards = 2
	if err := k.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, name, 6*time.Minute, "Steady with 2 shards on the kept claims", steadyCluster(2, 2))
	clusterCheck(t, vc, vc.Status.Nodes[0].IP)
	readAll(ctx, t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "fewer:", keys)

	started := false
	for _, h := range vc.Status.History {
		started = started || (h.Event == "bootstrap-complete" && strings.Contains(h.Message, "beyond the spec's 2, started for the volumes kept there"))
	}
	if !started {
		t.Errorf("no bootstrap-complete starting shard 2 beyond the spec in the history:\n%+v", vc.Status.History)
	}
}
