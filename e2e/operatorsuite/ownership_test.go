package operatorsuite

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

	// The cluster's own PodDisruptionBudget is repaired when someone edits it, and goes when
	// it is disabled.
	pdbKey := client.ObjectKey{Namespace: ns, Name: "api"}
	var pdb policyv1.PodDisruptionBudget
	if err := k.Get(ctx, pdbKey, &pdb); err != nil {
		t.Fatalf("no PodDisruptionBudget while enabled: %v", err)
	}
	want := pdb.Spec.DeepCopy()
	// A merge patch, as kubectl edit sends: the disruption controller writes the budget's
	// status meanwhile.
	if err := k.Patch(ctx, &pdb, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maxUnavailable":null,"minAvailable":3}}`))); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ctx, ns, "Repaired", "PodDisruptionBudget/api")
	if err := k.Get(ctx, pdbKey, &pdb); err != nil || !equality.Semantic.DeepDerivative(*want, pdb.Spec) {
		t.Fatalf("the edited PodDisruptionBudget was not repaired: %+v (%v), want %+v", pdb.Spec, err, *want)
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

// TestEveryKindInTheWayIsReportedAndLeftAlone: a ConfigMap, a PodDisruptionBudget and a
// StatefulSet of the user's carry the names a cluster "web" needs. The operator, whose cache
// never sees objects without its labels, finds each one when its create is refused, reads it
// from the API server, reports it and changes none of them.
func TestEveryKindInTheWayIsReportedAndLeftAlone(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 2*time.Minute)
	labels := map[string]string{"app": "theirs"}
	theirs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config", Labels: labels}, Data: map[string]string{"theirs": "yes"}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: labels}, Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptrTo(intstr.FromInt32(7)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		}},
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: labels}, Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: labels},
		}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: labels}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptrTo(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "theirs:1"}}}},
		}},
	}
	for _, o := range theirs {
		if err := k.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	web := newCluster(ns, "web", v1alpha1.TopologyReplication, 3)
	web.Spec.NetworkPolicy.Enabled = true
	if err := k.Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ctx, ns, "SupportObjectsFailed", "ConfigMap/web-config exists and is not this cluster's")
	waitEvent(t, ctx, ns, "SupportObjectsFailed", "NetworkPolicy/web exists and is not this cluster's")
	waitEvent(t, ctx, ns, "SupportObjectsFailed", "PodDisruptionBudget/web exists and is not this cluster's")
	waitEvent(t, ctx, ns, "ActionFailed", "StatefulSet/web exists and is not this cluster's")
	for _, o := range theirs {
		now := o.DeepCopyObject().(client.Object)
		if err := k.Get(ctx, client.ObjectKeyFromObject(o), now); err != nil {
			t.Fatalf("%T %s is gone: %v", o, o.GetName(), err)
		}
		if len(now.GetOwnerReferences()) != 0 || now.GetLabels()["app"] != "theirs" || now.GetGeneration() != o.GetGeneration() {
			t.Errorf("%T %s was changed or adopted: owners %v, labels %v, generation %d -> %d", o, o.GetName(), now.GetOwnerReferences(), now.GetLabels(), o.GetGeneration(), now.GetGeneration())
		}
	}
	if cm := (&corev1.ConfigMap{}); k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-config"}, cm) != nil || cm.Data["theirs"] != "yes" || len(cm.Data) != 1 {
		t.Errorf("the user's ConfigMap was rewritten: %v", cm.Data)
	}
}
