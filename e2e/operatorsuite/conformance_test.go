package operatorsuite

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	spec, _ := s3Store(t, ctx, ns)
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
	r := &cluster.Reconciler{Client: k, Recorder: events.NewFakeRecorder(1000), Metrics: shared.NewMetrics(prometheus.NewRegistry())}
	w := cluster.NewConformanceWorld(r, types.NamespacedName{Namespace: ns, Name: "conf"})
	conformance.Run(ctx, w, func(row conformance.Row, err error) {
		if err != nil {
			t.Errorf("%s: %v", row.Name, err)
		} else {
			t.Logf("ok: %s", row.Name)
		}
	})
}
