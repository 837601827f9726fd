package operatorsuite

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestConfigChangeRollsEveryPodWithoutLosingWrites changes a directive that needs a restart:
// the operator restarts the replicas one at a time, hands the primary role over, restarts the
// old primary, and a client writing all along loses no acknowledged write.
func TestConfigChangeRollsEveryPodWithoutLosingWrites(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 5*time.Minute)
	if err := k.Create(ctx, newCluster(ns, "roll", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "roll", 2*time.Minute, "Steady", steadyWith(3))
	c := writable(t, vc)
	before := podRevisions(t, ns)

	// A client writing all along through the client Service (reconnecting through failures).
	w := startWriter(ctx, c, "roll")

	vc = get(t, ns, "roll")
	vc.Spec.Config = map[string]v1alpha1.ConfigValue{"hz": "20"}
	if err := k.Update(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "roll", 3*time.Minute, "rolled and Steady", everyPodRestarted(t, ns, before, 3))
	sawRolling := false
	for _, h := range vc.Status.History {
		sawRolling = sawRolling || h.To == v1alpha1.StateRolling
	}
	if !sawRolling {
		t.Fatalf("history shows no Rolling:\n%s", summary(vc))
	}
	lost, acked := w.lost(t, writable(t, vc))
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost in a rolling restart:\n%s", lost, acked, summary(vc))
	}
	t.Logf("rolling restart done; %d writes acknowledged, none lost, %d failed and retried", acked, w.failures.Load())
}

func podRevisions(t *testing.T, ns string) map[string]string {
	t.Helper()
	var pods corev1.PodList
	if err := k.List(ctxFor(t, 10*time.Second), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = string(p.UID) + "/" + p.Annotations[kube.AnnotationRevision]
		}
	}
	return out
}

// everyPodRestarted is a converged cluster of n pods none of which is the pod (UID and
// revision) it was in before.
func everyPodRestarted(t *testing.T, ns string, before map[string]string, n int) func(*v1alpha1.ValkeyCluster) bool {
	return func(vc *v1alpha1.ValkeyCluster) bool {
		if !steadyWith(n)(vc) {
			return false
		}
		after := podRevisions(t, ns)
		for pod, rev := range after {
			if rev == before[pod] {
				return false
			}
		}
		return len(after) == n
	}
}
