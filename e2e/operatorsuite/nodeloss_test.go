package operatorsuite

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestLosingANodeWithThePrimaryAndAReplica: three pods on two nodes (fewer nodes than pods, as
// the default spread allows), the primary and a replica on the same node, which is lost. The
// replica left may lack writes acknowledged with WAIT 1 that only the lost replica has, so the
// operator does not fail over: status.waiting, Ready, an Event and kubectl valkey status say
// why and what the user can do. The user names the lost replica in failover-without; the
// failover goes on, history records the decision, writes acknowledged by every replica
// survive, the annotation is removed, and the lost pods rejoin when the node comes back.
func TestLosingANodeWithThePrimaryAndAReplica(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 5*time.Minute)
	nodes := cl.NodeNames()[:2]
	vc := newCluster(ns, "nl", v1alpha1.TopologyReplication, 3)
	vc.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: nodes,
		}}}},
	}}}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "nl", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	// The node with two pods; the primary moved onto it if it is not there.
	var pods corev1.PodList
	if err := k.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	on := map[string][]string{}
	for _, p := range pods.Items {
		on[p.Spec.NodeName] = append(on[p.Spec.NodeName], p.Name)
	}
	shared, other := nodes[0], nodes[1]
	if len(on[shared]) != 2 {
		shared, other = other, shared
	}
	if len(on[shared]) != 2 || len(on[other]) != 1 {
		t.Fatalf("want two pods on one node and one on the other: %v", on)
	}
	if !strings.Contains(strings.Join(on[shared], ","), vc.Status.Primary) {
		to := on[shared][0]
		annotate(t, ctx, ns, "nl", v1beta1.AnnotationSwitchoverTo, to)
		vc = waitFor(t, ns, "nl", time.Minute, "switched over to "+to, func(vc *v1alpha1.ValkeyCluster) bool {
			return vc.Status.Primary == to && steadyWith(3)(vc)
		})
	}
	primary, lostReplica, survivor := vc.Status.Primary, "", on[other][0]
	for _, p := range on[shared] {
		if p != primary {
			lostReplica = p
		}
	}
	c := writable(t, vc)
	const n = 100
	if err := setAndWait(ctx, c, "everywhere-", n, 2); err != nil {
		t.Fatal(err)
	}
	if err := cl.StopNode(ctx, shared); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.StartNode(context.Background(), shared) })

	vc = waitFor(t, ns, "nl", time.Minute, "waiting, saying why and what to do", func(vc *v1alpha1.ValkeyCluster) bool {
		r := meta.FindStatusCondition(vc.Status.Conditions, v1beta1.ConditionReady)
		return strings.Contains(vc.Status.Waiting, lostReplica) && strings.Contains(vc.Status.Waiting, v1beta1.AnnotationFailoverWithout) &&
			r != nil && r.Status == metav1.ConditionFalse
	})
	t.Logf("waiting: %s", vc.Status.Waiting)
	waitEvent(t, ctx, ns, "FailoverWaiting", v1beta1.AnnotationFailoverWithout)
	out, err := exec.Command(pluginBinary(t), "status", "nl", "-n", ns, "--kubeconfig", cl.KubeconfigPath()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), v1beta1.AnnotationFailoverWithout) {
		t.Fatalf("kubectl valkey status does not say what to do (%v):\n%s", err, out)
	}
	// Waiting is not a stall in disguise: nothing was promoted meanwhile.
	if vc.Status.Primary != primary {
		t.Fatalf("failed over to %s while %s was unseen", vc.Status.Primary, lostReplica)
	}

	annotate(t, ctx, ns, "nl", v1beta1.AnnotationFailoverWithout, lostReplica)
	vc = waitFor(t, ns, "nl", 90*time.Second, "failed over to "+survivor, func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.State == v1alpha1.StateSteady && vc.Status.Primary == survivor
	})
	recorded := false
	for _, h := range vc.Status.History {
		recorded = recorded || (strings.Contains(h.Message, "WITHOUT "+lostReplica) && strings.Contains(h.Message, "given up"))
	}
	if !recorded {
		t.Fatalf("history does not record the user's decision:\n%s", summary(vc))
	}
	waitEvent(t, ctx, ns, "FailoverWithoutCleared", "completed")
	if _, still := get(t, ns, "nl").Annotations[v1beta1.AnnotationFailoverWithout]; still {
		t.Fatal("the annotation outlived the failover it was given for")
	}
	// With both replicas on the lost node the new primary has none: min-replicas-to-write
	// refuses writes until the node is back, and its pods rejoin as replicas.
	if err := cl.StartNode(ctx, shared); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "nl", 2*time.Minute, "the lost pods back as replicas", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(3)(vc) && vc.Status.Primary == survivor
	})
	c2 := writable(t, vc)
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("everywhere-%d", i)
		if v, err := c2.Do(ctx, c2.B().Get().Key(key).Build()).ToString(); err != nil || v != "v" {
			t.Fatalf("%s, acknowledged by every replica, lost: %q, %v", key, v, err)
		}
	}
	checkReplication(t, vc, 2)
}

// annotate sets one annotation of a cluster with a merge patch, as kubectl annotate does
// (no conflict with the operator's own writes).
func annotate(t *testing.T, ctx context.Context, ns, name, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k.Patch(ctx, vc, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}
