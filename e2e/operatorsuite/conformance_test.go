package operatorsuite

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	vk "github.com/valkey-io/valkey-go"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine/conformance"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/cluster"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
)

// TestRealActuatorsConformToTheTable runs the actuator contract (machine/conformance) against
// the operator's real actuators and observer on the local cluster with real Valkey; the
// simulated world passes the same table (machine/sim's TestSimulatedActuatorsConformToTheTable),
// so the simulator does what the operator really does. The operator brings the cluster to
// Steady and is stopped; the table's actions then go through the code a reconcile runs. Events
// go to a recording sink (they are not what the table checks). The restore row backs the
// cluster up into the local cluster's S3 server (versitygw) and loads it back.
func TestRealActuatorsConformToTheTable(t *testing.T) {
	ns := cl.Namespace(t)
	op := startOperator(t, "")
	ctx := ctxFor(t, 5*time.Minute)
	// A store and data for the restore row.
	spec, store := s3Store(t, ctx, ns)
	conf := newCluster(ns, "conf", v1alpha1.TopologyReplication, 3)
	conf.Spec.Backup = &v1alpha1.BackupSpec{Store: spec}
	if err := k.Create(ctx, conf); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "conf", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	if vc.Status.Primary != "conf-0" {
		annotate(t, ctx, ns, "conf", v1beta1.AnnotationSwitchoverTo, "conf-0")
		waitFor(t, ns, "conf", time.Minute, "conf-0 the primary", func(vc *v1alpha1.ValkeyCluster) bool {
			return vc.Status.Primary == "conf-0" && steadyWith(3)(vc)
		})
	}
	fill(t, ctx, writable(t, get(t, ns, "conf")), "conf", 300)
	op.stop(t)
	w := &replicationWorld{realWorld: realWorldOf(ns, "conf"), store: store}
	conformance.Run(ctx, w, reportRows(t))
}

// TestRealActuatorsConformToTheClusterTable runs the cluster-mode rows of the actuator contract
// (conformance.ClusterTable) against the real actuators: a Cluster topology of two shards of two
// pods formed by the operator, which is then stopped, with keys written by a cluster client;
// machine/sim's TestSimulatedActuatorsConformToTheClusterTable runs the same rows. Rows that
// move data are judged by another cluster client, seeded with one pod, reading every key back.
func TestRealActuatorsConformToTheClusterTable(t *testing.T) {
	ns, ctx, vc, op := steadyShardsWithOperator(t, "conf", 2, 2, "", 6*time.Minute)
	pass := password(t, vc)
	const keys = 300
	writeAcked(ctx, t, clusterClient(t, clientServiceAddr(t, vc), pass), "conf:", keys)
	op.stop(t)
	reader := clusterClient(t, net.JoinHostPort(podIPs(t, ns)[0], "6379"), pass)
	w := &clusterWorld{realWorld: realWorldOf(ns, "conf"), ns: ns, reader: reader, prefix: "conf:", keys: keys}
	conformance.RunCluster(ctx, w, reportRows(t))
}

// realWorldOf drives the cluster ns/name with a reconciler of its own (no manager: nothing
// reconciles; events go to a recording sink).
func realWorldOf(ns, name string) realWorld {
	r := &cluster.Reconciler{Client: k, Recorder: events.NewFakeRecorder(1000), Metrics: shared.NewMetrics(prometheus.NewRegistry())}
	return realWorld{r: r, key: types.NamespacedName{Namespace: ns, Name: name}}
}

// reportRows reports each row of a table as a test error or a log line.
func reportRows(t *testing.T) func(conformance.Row, error) {
	return func(row conformance.Row, err error) {
		if err != nil {
			t.Errorf("%s: %v", row.Name, err)
		} else {
			t.Logf("ok: %s", row.Name)
		}
	}
}

// clusterWorld is realWorld in cluster mode, with keys prefix0..prefix<keys-1> written before
// the table (writeAcked) and read back by reader, a cluster client of the test's own.
type clusterWorld struct {
	realWorld
	ns     string
	reader vk.Client
	prefix string
	keys   int
}

// CheckData reads every key back; a read that fails (not a missing key) is tried again for a
// while, as an application's client does while its slot map catches up.
func (c *clusterWorld) CheckData(ctx context.Context) error {
	for i := 0; i < c.keys; i++ {
		key := fmt.Sprintf("%s%d", c.prefix, i)
		got, err := c.reader.Do(ctx, c.reader.B().Get().Key(key).Build()).ToString()
		for deadline := time.Now().Add(15 * time.Second); err != nil && !vk.IsValkeyNil(err) && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
			got, err = c.reader.Do(ctx, c.reader.B().Get().Key(key).Build()).ToString()
		}
		if err != nil || got != key {
			return fmt.Errorf("reading %s: %q, %v", key, got, err)
		}
	}
	return nil
}

// EmptyRestart kills the node's containers and empties its volumes before they start again.
func (c *clusterWorld) EmptyRestart(ctx context.Context, node string) error {
	return cl.WipeVolumes(ctx, c.ns, node)
}
