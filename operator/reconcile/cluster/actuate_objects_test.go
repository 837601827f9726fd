package cluster

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// The objects the operator applies every turn, and the StatefulSets an EnsureObjects applies,
// are written once: applied again as the API server stored them (its defaults filled in), they
// need no update. Once, the sentinels' StatefulSet was updated on every turn, with a Repaired
// Event each time: its probes leave the success threshold to the API server's default, which
// the comparison read as drift.
func TestObjectsAppliedTwiceAreWrittenOnce(t *testing.T) {
	c := apiClient(t)
	ctx := context.Background()
	for _, spec := range []v1beta1.ValkeyClusterSpec{
		{Topology: v1beta1.TopologyReplication},
		{Topology: v1beta1.TopologySentinel, Sentinel: &v1beta1.SentinelSpec{}},
		{Topology: v1beta1.TopologyCluster, Shards: 3},
	} {
		t.Run(string(spec.Topology), func(t *testing.T) {
			ns := newNamespace(t, c, "apply-")
			vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "twice"}, Spec: spec}
			if err := c.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			v1beta1.SetDefaults(&vc.Spec)
			owner := *metav1.NewControllerRef(vc, v1beta1.SchemeGroupVersion.WithKind("ValkeyCluster"))
			shards := 1
			if spec.Shards > 0 {
				shards = int(spec.Shards)
			}
			for i, statefulSets := range []bool{false, false, true, true} {
				d := kube.Build(vc, owner) // afresh each time, as every turn builds it
				if statefulSets {
					a := machine.EnsureObjects{Shards: shards, Replicas: int(*vc.Spec.Replicas), Revision: d.Revision}
					if d.Sentinels != nil {
						a.Sentinels = int(vc.Spec.Sentinel.Replicas)
					}
					var err error
					if d, err = kube.ForAction(d, a); err != nil {
						t.Fatal(err)
					}
				}
				res, err := kube.Apply(ctx, c, c, d, statefulSets)
				if err != nil {
					t.Fatal(err)
				}
				if second := i%2 == 1; second && len(res.Created)+len(res.Updated) > 0 {
					t.Errorf("applied again (StatefulSets: %v), unchanged: created %v, updated %v", statefulSets, res.Created, res.Updated)
				}
			}
		})
	}
}
