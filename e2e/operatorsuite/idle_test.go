package operatorsuite

import (
	"context"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// objectVersions is the resourceVersion of the cluster and of everything in its namespace
// the operator writes: any write shows up as a changed version.
func objectVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	ctx := ctxFor(t, 10*time.Second)
	out := map[string]string{}
	var vcs v1alpha1.ValkeyClusterList
	var pods corev1.PodList
	var svcs corev1.ServiceList
	var cms corev1.ConfigMapList
	var secrets corev1.SecretList
	for _, l := range []client.ObjectList{&vcs, &pods, &svcs, &cms, &secrets} {
		if err := k.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range vcs.Items {
		out["vkc/"+o.Name] = o.ResourceVersion
	}
	for _, o := range svcs.Items {
		out["svc/"+o.Name] = o.ResourceVersion
	}
	for _, o := range cms.Items {
		out["cm/"+o.Name] = o.ResourceVersion
	}
	for _, o := range secrets.Items {
		out["secret/"+o.Name] = o.ResourceVersion
	}
	for _, o := range pods.Items {
		// Pod status belongs to the node agent (probes); the operator writes only labels.
		out["pod-labels/"+o.Name] = labelsString(o.ObjectMeta)
	}
	return out
}

func labelsString(m metav1.ObjectMeta) string {
	keys := make([]string, 0, len(m.Labels))
	for k := range m.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		s += k + "=" + m.Labels[k] + ","
	}
	return s
}

// TestIdleClusterCostsNoAPIWrites: once Steady, a cluster where nothing happens must not be
// written to by the operator (no status churn, no re-applies, no label flapping), even
// though every node is surveyed every second.
func TestIdleClusterCostsNoAPIWrites(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	if err := k.Create(ctxFor(t, 10*time.Second), newCluster(ns, "idle", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "idle", 2*time.Minute, "Steady", steadyWith(3))
	time.Sleep(3 * time.Second) // let the last roles and reports land
	before := objectVersions(t, ns)
	// Longer than repl-ping-replica-period (10 s), which moves offsets on an idle primary.
	select {
	case <-time.After(15 * time.Second):
	case <-context.Background().Done():
	}
	after := objectVersions(t, ns)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed while idle (%s -> %s)", k, v, after[k])
		}
	}
	if len(after) != len(before) {
		t.Errorf("objects appeared or vanished while idle: %d -> %d", len(before), len(after))
	}
}
