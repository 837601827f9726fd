package operatorsuite

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestTheStatefulSetFollowsTheMachineNotTheSpec: the machine holds a scale-down back while
// the primary sits on an ordinal it removes (it hands the primary over first, and the
// partition keeps that from completing for a while); a template change arriving meanwhile must
// update the template and keep the pod count (the kube actuator used to rebuild the
// StatefulSet from the spec, so it either shrank over the primary or refused the template
// change). Once healed, the hand-over and the shrink happen. A larger storage size grows
// every claim (ExpandVolumes), whatever the state.
func TestTheStatefulSetFollowsTheMachineNotTheSpec(t *testing.T) {
	ns, ctx, _ := steadyReplication(t, "held", 4*time.Minute)
	vc := switchoverTo(t, ns, "held", "held-2")
	// The primary is cut off from its replicas (the links notice only after a timeout).
	ip2 := mustAddr(t, vc, "held-2")
	if err := cl.Partition(ip2, mustAddr(t, vc, "held-0")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Heal() })
	if err := cl.Partition(ip2, mustAddr(t, vc, "held-1")); err != nil {
		t.Fatal(err)
	}
	var sts appsv1.StatefulSet
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, &sts); err != nil {
		t.Fatal(err)
	}
	oldRevision := sts.Spec.Template.Annotations[kube.AnnotationRevision]
	vc = get(t, ns, "held")
	vc.Spec.Replicas = 2
	vc.Spec.Storage.Size = ptrTo(resource.MustParse("2Gi"))
	if vc.Annotations == nil {
		vc.Annotations = map[string]string{}
	}
	vc.Annotations[v1beta1.AnnotationRestartRequested] = time.Now().UTC().Format(time.RFC3339)
	update(t, ctx, vc)
	// The template moves to the new revision; the pod count stays where the machine holds it.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, &sts); err != nil {
			return false, nil
		}
		return sts.Spec.Template.Annotations[kube.AnnotationRevision] != oldRevision, nil
	})
	if err != nil {
		t.Fatalf("the template was not updated while the scale-down is held: %v\n%s", err, operatorTrail(ns))
	}
	if *sts.Spec.Replicas != 3 {
		t.Fatalf("the StatefulSet asks for %d pods while the machine holds the scale-down (primary held-2 on a removed ordinal)", *sts.Spec.Replicas)
	}
	// Status says what is there (3 pods), not what the spec asks for (2).
	waitFor(t, ns, "held", 20*time.Second, "status.replicas = 3 pods that exist", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.ObservedGeneration == vc.Generation && vc.Spec.Replicas == 2 && vc.Status.Replicas == 3
	})
	// Every claim grows, whatever the state of the cluster.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var claims corev1.PersistentVolumeClaimList
		if err := k.List(ctx, &claims, client.InNamespace(ns)); err != nil || len(claims.Items) != 3 {
			return false, nil
		}
		for _, c := range claims.Items {
			if c.Spec.Resources.Requests.Storage().Cmp(resource.MustParse("2Gi")) != 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the claims were not grown to 2Gi: %v\n%s", err, operatorTrail(ns))
	}
	for i := 0; i < 10; i++ {
		var pod corev1.Pod
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held-2"}, &pod); err != nil || pod.DeletionTimestamp != nil {
			t.Fatalf("the primary's pod held-2 is going away while its scale-down is held: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := cl.Heal(); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "held", 3*time.Minute, "scaled down to 2 after the hand-over, every pod rolled", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(2)(vc) && vc.Status.Primary != "held-2"
	})
	checkHistoryChains(t, vc)
}

func ptrTo[T any](v T) *T { return &v }

// TestAFailingActionBacksOffAndBlocksNothingIndependent: the API server refuses every write
// to the StatefulSet (an admission policy), and the user asks for a fourth pod and larger
// volumes at once. The machine decides ensure-objects (refused) and expand-volumes; the
// volumes grow anyway (they do not depend on the StatefulSet), and the refused action is
// tried again with a back-off that doubles, its count and error in status.failingActions,
// instead of every second. Once the policy is gone the scale-up happens and the list empties.
func TestAFailingActionBacksOffAndBlocksNothingIndependent(t *testing.T) {
	ns, ctx, _ := steadyReplication(t, "bk", 4*time.Minute)
	denyByPolicy(t, ctx, ns, admissionv1.RuleWithOperations{
		Operations: []admissionv1.OperationType{admissionv1.Update},
		Rule:       admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"statefulsets"}},
	}, "false")
	// The policy takes effect once loaded: until then the scale-up may go through, which
	// would leave nothing to test; so wait until it refuses a write of ours.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var sts appsv1.StatefulSet
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bk"}, &sts); err != nil {
			return false, nil
		}
		if sts.Annotations == nil {
			sts.Annotations = map[string]string{}
		}
		sts.Annotations["test-probe"] = time.Now().String()
		return k.Update(ctx, &sts) != nil, nil
	})
	if err != nil {
		t.Fatal("the admission policy never took effect")
	}
	vc := get(t, ns, "bk")
	vc.Spec.Replicas = 4
	vc.Spec.Storage.Size = ptrTo(resource.MustParse("2Gi"))
	update(t, ctx, vc)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var claims corev1.PersistentVolumeClaimList
		if err := k.List(ctx, &claims, client.InNamespace(ns)); err != nil || len(claims.Items) != 3 {
			return false, nil
		}
		for _, c := range claims.Items {
			if c.Spec.Resources.Requests.Storage().Cmp(resource.MustParse("2Gi")) != 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the claims did not grow while ensure-objects failed: %v\n%s", err, operatorTrail(ns))
	}
	failing := func(vc *v1alpha1.ValkeyCluster) *v1alpha1.FailingAction {
		for i, f := range vc.Status.FailingActions {
			if strings.HasPrefix(f.Action, "ensure-objects") {
				return &vc.Status.FailingActions[i]
			}
		}
		return nil
	}
	vc = waitFor(t, ns, "bk", 30*time.Second, "ensure-objects in status.failingActions", func(vc *v1alpha1.ValkeyCluster) bool {
		f := failing(vc)
		return f != nil && f.Count >= 2 && strings.Contains(f.LastError, "refused by the test's admission policy")
	})
	first := *failing(vc)
	const window = 10 * time.Second
	time.Sleep(window)
	later := failing(get(t, ns, "bk"))
	if later == nil {
		t.Fatal("ensure-objects left status.failingActions while it still fails")
	}
	// Tried every second, it would have failed about ten more times; doubling from a second,
	// at most four (the tries are at 2, 4, 8, 16 s after the first failure).
	tries := later.Count - first.Count
	t.Logf("ensure-objects: %d failures, then %d more in %s; next try %s", first.Count, tries, window, later.RetryAt.Format(time.TimeOnly))
	if tries < 1 || tries > 5 {
		t.Fatalf("%d more tries in %s: want a doubling back-off (1 to 5), not a fixed retry nor none", tries, window)
	}
	var policy admissionv1.ValidatingAdmissionPolicy
	policy.Name = "deny-" + ns
	if err := k.Delete(ctx, &policy); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "bk", 2*time.Minute, "scaled up once the StatefulSet can be written, nothing failing", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(4)(vc) && len(vc.Status.FailingActions) == 0
	})
}
