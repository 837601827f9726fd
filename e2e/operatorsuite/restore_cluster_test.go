package operatorsuite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/internal/oracle"
)

// TestAClusterTopologyIsRestoredPerShard: a Cluster topology of two shards of two pods is backed
// up (one file per shard), then written to and overwritten; restoreFrom takes it through
// Restoring and back to Steady, and every pod, replicas included, holds exactly what its shard
// held at the snapshot (the oracle's digest of every key, per node, against the one taken at the
// snapshot); valkey-cli --cluster check finds every slot covered and the nodes agreeing; the
// cluster takes writes again. A new Cluster of another name with restoreFrom goes from
// Bootstrapping to Restoring and holds the same data per shard.
func TestAClusterTopologyIsRestoredPerShard(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 8*time.Minute)
	spec, _ := s3Store(t, ctx, ns)
	vc := newCluster(ns, "sharded", v1alpha1.TopologyCluster, 2)
	vc.Spec.Shards = 2
	vc.Spec.Backup = &v1alpha1.BackupSpec{Store: spec}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "sharded", 3*time.Minute, "Steady with 2 shards of 2", steadyCluster(2, 2))
	c := clusterClient(t, vc.Status.Nodes[0].IP+":6379", password(t, vc))
	fill(t, ctx, c, "k", 1000)
	atSnapshot := shardDigests(t, ctx, vc)
	if err := k.Create(ctx, newBackup(ns, "snap", "sharded")); err != nil {
		t.Fatal(err)
	}
	vb := waitBackup(t, ns, "snap", 2*time.Minute, "Completed", phase(v1alpha1.BackupCompleted))
	if len(vb.Status.Shards) != 2 {
		t.Fatalf("the backup holds %d shard file(s), want 2", len(vb.Status.Shards))
	}
	fill(t, ctx, c, "k", 300) // overwrites
	fill(t, ctx, c, "later", 200)
	if fmt.Sprint(shardDigests(t, ctx, vc)) == fmt.Sprint(atSnapshot) {
		t.Fatal("the writes after the backup did not change the data: the test would prove nothing")
	}

	// In place.
	restoreInPlace(t, ctx, ns, "sharded", v1beta1.RestoreSource{Backup: "snap"})
	waitFor(t, ns, "sharded", 3*time.Minute, "restored", restorePhase("Completed"))
	vc = waitFor(t, ns, "sharded", time.Minute, "Steady with 2 shards of 2", steadyCluster(2, 2))
	checkRestoredPerShard(t, ctx, vc, atSnapshot)
	clusterCheck(t, vc, vc.Status.Nodes[0].IP)
	if h := strings.Join(historyEvents(vc), "; "); !strings.Contains(h, "Steady -restore-requested-> Restoring") || !strings.Contains(h, "Restoring -restore-complete-> Steady") {
		t.Errorf("history does not show the restore: %s", h)
	}
	c = clusterClient(t, vc.Status.Nodes[0].IP+":6379", password(t, vc))
	for i := 0; i < 20; i++ {
		if err := c.Do(ctx, c.B().Set().Key(fmt.Sprintf("after:%d", i)).Value("restore").Build()).Error(); err != nil {
			t.Fatalf("no write after the restore: %v", err)
		}
	}

	// Into a new cluster of another name.
	cp := newCluster(ns, "sharded-copy", v1alpha1.TopologyCluster, 1)
	cp.Spec.Shards = 2
	cp.Spec.RestoreFrom = &v1alpha1.RestoreSource{Backup: "snap"}
	if err := k.Create(ctx, cp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "sharded-copy", 3*time.Minute, "restored", restorePhase("Completed"))
	cp = waitFor(t, ns, "sharded-copy", time.Minute, "Steady with 2 shards of 1", steadyCluster(2, 1))
	if h := historyEvents(cp); len(h) == 0 || h[0] != "Bootstrapping -restore-requested-> Restoring" {
		t.Errorf("the new cluster's history: %v; want Bootstrapping to Restoring first, never Steady before the load", h)
	}
	checkRestoredPerShard(t, ctx, cp, atSnapshot)
	clusterCheck(t, cp, cp.Status.Nodes[0].IP)
}

// shardDigests is the oracle's digest of each shard's data, read at its primary.
func shardDigests(t *testing.T, ctx context.Context, vc *v1alpha1.ValkeyCluster) map[int32]string {
	t.Helper()
	out := map[int32]string{}
	for _, n := range vc.Status.Nodes {
		if n.Role == v1alpha1.NodeRolePrimary {
			out[n.Shard] = nodeDigest(t, ctx, vc, n.IP)
		}
	}
	if len(out) != int(vc.Spec.Shards) {
		t.Fatalf("%d shard primaries in status, want %d", len(out), vc.Spec.Shards)
	}
	return out
}

// checkRestoredPerShard checks that every pod of vc holds what its shard held at the snapshot.
func checkRestoredPerShard(t *testing.T, ctx context.Context, vc *v1alpha1.ValkeyCluster, want map[int32]string) {
	t.Helper()
	for _, n := range vc.Status.Nodes {
		if got := nodeDigest(t, ctx, vc, n.IP); got != want[n.Shard] {
			t.Errorf("pod %s (shard %d, %s) holds other data than its shard at the snapshot", n.Pod, n.Shard, n.Role)
		}
	}
}

// nodeDigest is the oracle's digest of the keys one cluster node holds, read on a connection
// of its own that said READONLY (a replica then answers for its primary's slots).
func nodeDigest(t *testing.T, ctx context.Context, vc *v1alpha1.ValkeyCluster, ip string) string {
	t.Helper()
	var d string
	err := appClient(t, ip+":6379", password(t, vc)).Dedicated(func(c vk.DedicatedClient) error {
		if err := c.Do(ctx, c.B().Readonly().Build()).Error(); err != nil {
			return err
		}
		var err error
		d, _, err = oracle.Digest(ctx, c)
		return err
	})
	if err != nil {
		t.Fatalf("digest of %s: %v", ip, err)
	}
	return d
}
