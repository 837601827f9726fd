package operatorsuite

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestObjectsThatAreNotOursAreNeverTouched: the user's own Service "api" has the name the
// client Service of a ValkeyCluster "api" must have. The operator reports it (an Event and
// status.waiting) and leaves it as it is: not changed, not adopted, so deleting the cluster
// does not garbage-collect it. The cluster runs without it. Disabling the
// PodDisruptionBudget deletes the cluster's own.
func TestObjectsThatAreNotOursAreNeverTouched(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 4*time.Minute)
	theirs := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api", Labels: map[string]string{"app": "theirs"}},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "theirs"}, Ports: []corev1.ServicePort{{Port: 8080, TargetPort: intstr.FromInt32(8080)}}},
	}
	if err := k.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	if err := k.Create(ctx, newCluster(ns, "api", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ctx, ns, "SupportObjectsFailed", "Service/api exists and is not this cluster's")
	vc := waitFor(t, ns, "api", 2*time.Minute, "Steady, saying the Service is in the way", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.State == v1alpha1.StateSteady && strings.Contains(vc.Status.Waiting, "Service/api exists and is not this cluster's")
	})
	unchanged := func() {
		t.Helper()
		var s corev1.Service
		if err := k.Get(ctx, client.ObjectKeyFromObject(theirs), &s); err != nil {
			t.Fatalf("the user's Service is gone: %v", err)
		}
		if len(s.OwnerReferences) != 0 || s.Spec.Selector["app"] != "theirs" || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 8080 {
			t.Fatalf("the user's Service was changed or adopted: owners %v, selector %v, ports %v", s.OwnerReferences, s.Spec.Selector, s.Spec.Ports)
		}
	}
	unchanged()

	// The cluster's own PodDisruptionBudget goes when it is disabled.
	pdbKey := client.ObjectKey{Namespace: ns, Name: "api"}
	if err := k.Get(ctx, pdbKey, &policyv1.PodDisruptionBudget{}); err != nil {
		t.Fatalf("no PodDisruptionBudget while enabled: %v", err)
	}
	vc.Spec.PodDisruptionBudget.Enabled = ptrTo(false)
	update(t, ctx, vc)
	waitEvent(t, ctx, ns, "Deleted", "PodDisruptionBudget/api")
	if err := k.Get(ctx, pdbKey, &policyv1.PodDisruptionBudget{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the PodDisruptionBudget outlived its disabling: %v", err)
	}

	// Deleting the cluster leaves the user's Service alone (no owner reference, no GC).
	if err := k.Delete(ctx, vc); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "api"}, &v1alpha1.ValkeyCluster{})), nil
	})
	if err != nil {
		t.Fatal("the cluster was not deleted")
	}
	time.Sleep(2 * time.Second) // the garbage collector's turn
	unchanged()
}
