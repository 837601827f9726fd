package operatorsuite

import (
	"context"
	"fmt"
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
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
)

// TestFailoverGoesOnWhenASupportObjectCannotBeWritten: the API server refuses to create the
// cluster's read Service (a ValidatingAdmissionPolicy, the kind of refusal a policy engine or
// a quota gives). The operator reports it and still fails over when the primary dies: a
// Service repair must never stand between a cluster and its failover.
func TestFailoverGoesOnWhenASupportObjectCannotBeWritten(t *testing.T) {
	ns, ctx, vc := steadyReplication(t, "sup", 3*time.Minute)
	refused := "sup-replicas"
	denyByPolicy(t, ctx, ns, admissionv1.RuleWithOperations{
		Operations: []admissionv1.OperationType{admissionv1.Create},
		Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
	}, "object.metadata.name != '"+refused+"' && object.metadata.name != 'vap-probe'")
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
		return failedOver && vc.Status.State == v1alpha1.StateSteady && meta.IsStatusConditionTrue(vc.Status.Conditions, v1beta1.ConditionReady)
	})
	t.Logf("primary %s killed; now %s, with %s still refused", old, vc.Status.Primary, refused)
	writable(t, vc)
}

// denyByPolicy installs a ValidatingAdmissionPolicy (and its binding to namespace ns) that
// refuses the requests rule matches unless expression holds: the kind of refusal a policy
// engine or a quota gives. Removed when the test ends. It takes effect once the API server
// has loaded it; callers probe for that.
func denyByPolicy(t *testing.T, ctx context.Context, ns string, rule admissionv1.RuleWithOperations, expression string) {
	t.Helper()
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: rule}}},
			Validations:      []admissionv1.Validation{{Expression: expression, Message: "refused by the test's admission policy"}},
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
}

// TestAStatusWriteTheAPIServerRefusesIsReportedAndRetriedCalmly: an admission policy refuses
// every status write of the cluster, and its primary dies. The failover cannot be written, so
// nothing of it is done; the operator says so (a Warning Event with the API server's reason)
// and retries at its retry interval, not in a tight loop. Once the policy is gone, the
// failover goes through.
func TestAStatusWriteTheAPIServerRefusesIsReportedAndRetriedCalmly(t *testing.T) {
	ns, ctx, vc := steadyReplication(t, "stw", 3*time.Minute)
	denyByPolicy(t, ctx, ns, admissionv1.RuleWithOperations{
		Operations: []admissionv1.OperationType{admissionv1.Update},
		Rule:       admissionv1.Rule{APIGroups: []string{v1alpha1.GroupName}, APIVersions: []string{"*"}, Resources: []string{"valkeyclusters/status"}},
	}, "object.metadata.name != 'stw'")
	// The policy takes effect once the API server has loaded it: change the spec (a live
	// directive, so nothing restarts) until writing the observed generation is refused.
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		if hasEvent(ctx, ns, "StatusWriteFailed", "refused by the test's admission policy") {
			return true, nil
		}
		cur := get(t, ns, "stw")
		cur.Spec.Config = map[string]v1alpha1.ConfigValue{"slowlog-max-len": v1alpha1.ConfigValue(fmt.Sprint(time.Now().UnixNano() % 1000))}
		_ = k.Update(ctx, cur)
		return false, nil
	})
	if err != nil {
		t.Fatal("no StatusWriteFailed Event: the policy never took effect, or the refusal is not reported")
	}
	old := vc.Status.Primary
	if err := cl.KillContainer(ns, old, "valkey"); err != nil {
		t.Fatal(err)
	}
	// The policy may take a moment to load: count the refusals from the first one on.
	const window = 8 * time.Second
	first := strings.Count(localcluster.SuiteLog(10000, ns, "status write refused"), "\n")
	time.Sleep(window)
	refusals := strings.Count(localcluster.SuiteLog(10000, ns, "status write refused"), "\n") - first
	t.Logf("%d refused status writes in %s", refusals, window)
	if refusals < 2 || refusals > 30 {
		t.Fatalf("%d refused status writes in %s: want a retry about every second (the suite's retry interval), neither silence nor a tight loop", refusals, window)
	}
	if cur := get(t, ns, "stw"); cur.Status.State != v1alpha1.StateSteady || cur.Status.Primary != old {
		t.Fatalf("a transition the API server refused was recorded: %s, primary %s", cur.Status.State, cur.Status.Primary)
	}
	var policy admissionv1.ValidatingAdmissionPolicy
	policy.Name = "deny-" + ns
	if err := k.Delete(ctx, &policy); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "stw", 90*time.Second, "failed over once status can be written", func(vc *v1alpha1.ValkeyCluster) bool {
		recovered := false
		for _, h := range vc.Status.History {
			recovered = recovered || h.Event == "failover-complete" || h.Event == "primary-recovered"
		}
		return recovered && vc.Status.State == v1alpha1.StateSteady && meta.IsStatusConditionTrue(vc.Status.Conditions, v1beta1.ConditionReady)
	})
	writable(t, vc)
}

// hasEvent reports whether an Event of the reason whose note contains text was recorded in ns.
func hasEvent(ctx context.Context, ns, reason, text string) bool {
	var evs eventsv1.EventList
	if err := k.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		return false
	}
	for _, e := range evs.Items {
		if e.Reason == reason && strings.Contains(e.Note, text) {
			return true
		}
	}
	return false
}

// waitEvent waits for an Event of the reason whose note contains text.
func waitEvent(t *testing.T, ctx context.Context, ns, reason, text string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return hasEvent(ctx, ns, reason, text), nil
	})
	if err != nil {
		t.Fatalf("no Event %s mentioning %q", reason, text)
	}
}
