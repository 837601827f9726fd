package operatorsuite

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestFailoverGoesOnWhenASupportObjectCannotBeWritten: the API server refuses to create the
// cluster's read Service (a ValidatingAdmissionPolicy, the kind of refusal a policy engine or
// a quota gives). The operator reports it and still fails over when the primary dies: a
// Service repair must never stand between a cluster and its failover.
func TestFailoverGoesOnWhenASupportObjectCannotBeWritten(t *testing.T) {
	ns, ctx, vc := steadyReplication(t, "sup", 3*time.Minute)
	refused := "sup-replicas"
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: "object.metadata.name != '" + refused + "' && object.metadata.name != 'vap-probe'",
				Message:    "refused by the test's admission policy",
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := k.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k.Delete(context.Background(), o) })
	}
	// The policy takes effect once the API server has loaded it: probe with a Service of ours.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		probe := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vap-probe"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 1}}}}
		if err := k.Create(ctx, probe); err == nil {
			_ = k.Delete(ctx, probe)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		t.Fatal("the admission policy never took effect")
	}
	if err := k.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: refused}}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ctx, ns, "SupportObjectsFailed", refused)
	old := vc.Status.Primary
	if err := cl.KillContainer(ns, old, "valkey"); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "sup", 90*time.Second, "failed over while the Service cannot be created", func(vc *v1alpha1.ValkeyCluster) bool {
		failedOver := false
		for _, h := range vc.Status.History {
			failedOver = failedOver || h.Event == "failover-complete"
		}
		return failedOver && vc.Status.State == v1alpha1.StateSteady && meta.IsStatusConditionTrue(vc.Status.Conditions, v1alpha1.ConditionReady)
	})
	t.Logf("primary %s killed; now %s, with %s still refused", old, vc.Status.Primary, refused)
	writable(t, vc)
}

// waitEvent waits for an Event of the reason whose note contains text.
func waitEvent(t *testing.T, ctx context.Context, ns, reason, text string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var evs eventsv1.EventList
		if err := k.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		for _, e := range evs.Items {
			if e.Reason == reason && strings.Contains(e.Note, text) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Event %s mentioning %q", reason, text)
	}
}
