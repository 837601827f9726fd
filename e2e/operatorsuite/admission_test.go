package operatorsuite

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/cluster"
)

// TestChartAdmissionWebhooks installs the chart with webhooks.enabled (namespaced, so that
// its webhooks apply to one namespace of this test): the operator's pod defaults and checks
// specs through the chart's Service, certificate and configurations. Then the webhook is made
// unreachable: a user's create is refused, and deleting a cluster still completes, the
// operator's pod (its real ServiceAccount, which the chart's matchConditions exempt) removing
// its finalizer past the webhook.
func TestChartAdmissionWebhooks(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	const opNS, release = "vo-admission", "vo-admission"
	watched := cl.Namespace(t)
	helm(t, "install", release, "../../charts/valkey-operator", "--namespace", opNS, "--create-namespace",
		"--set", "retryInterval=1s", "--set", "watchNamespaces={"+watched+"}", "--set", "webhooks.enabled=true",
		"--set", "journal.persistence.enabled=false", "--set", "journal.api.enabled=false", "--set", "replicas=1", "--set", "crds.enabled=false", "--wait", "--timeout", "3m")
	t.Cleanup(func() {
		helm(t, "uninstall", release, "--namespace", opNS, "--wait", "--timeout", "2m")
	})
	ctx := ctxFor(t, 4*time.Minute)
	// The local cluster's API server reaches a pod through an ExternalName naming its address.
	if err := cl.PointServiceAtPod(ctx, opNS, release+"-webhook", nil); err != nil {
		t.Fatal(err)
	}
	probe := &v1beta1.ValkeyACL{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: watched}, Spec: v1beta1.ValkeyACLSpec{
		Cluster: "absent", User: "probe-user", Rules: []v1beta1.ACLRule{"+get"}, PasswordSecretRefs: []v1beta1.SecretKeyRef{{Name: "absent"}},
	}}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = k.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), "ValkeyCluster "+watched+"/absent, which does not exist"), nil
	})
	if err != nil {
		t.Fatalf("the chart's validating webhook does not answer through its Service: %v", last)
	}

	refusedWith := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a refusal with %q", what, err, want)
		}
	}
	refusedWith("a cluster naming a missing Secret", k.Create(ctx, &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "nopw", Namespace: watched},
		Spec: v1beta1.ValkeyClusterSpec{Auth: v1beta1.AuthSpec{PasswordSecretRef: &v1beta1.SecretKeyRef{Name: "nope"}}}}), "Secret "+watched+"/nope, which does not exist")
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: watched}, Spec: v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologyStandalone}}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	if vc.Spec.Replicas == nil || *vc.Spec.Replicas != 0 || vc.Spec.Storage.Size == nil || vc.Spec.Storage.Size.String() != "10Gi" {
		t.Errorf("a Standalone cluster is stored with replicas %v and storage.size %v, want 0 and 10Gi", ptr.Deref(vc.Spec.Replicas, -1), vc.Spec.Storage.Size)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(vc), vc)
		return err == nil && vc.Status.State == v1beta1.StateSteady && slices.Contains(vc.Finalizers, cluster.Finalizer), nil
	})
	if err != nil {
		t.Fatalf("the cluster is not Steady with the operator's finalizer: state %q, finalizers %v", vc.Status.State, vc.Finalizers)
	}

	// The API server can no longer reach the webhook while the operator runs (as behind a
	// network policy): its configurations name a Service that does not exist. (Deleting the
	// Service itself would not do: the API server keeps its open connections to the pod.)
	admissionClient := cl.Clientset().AdmissionregistrationV1()
	mutating, err := admissionClient.MutatingWebhookConfigurations().Get(ctx, release, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range mutating.Webhooks {
		mutating.Webhooks[i].ClientConfig.Service.Name = release + "-gone"
	}
	if _, err := admissionClient.MutatingWebhookConfigurations().Update(ctx, mutating, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	validating, err := admissionClient.ValidatingWebhookConfigurations().Get(ctx, release, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range validating.Webhooks {
		validating.Webhooks[i].ClientConfig.Service.Name = release + "-gone"
	}
	if _, err := admissionClient.ValidatingWebhookConfigurations().Update(ctx, validating, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = k.Create(ctx, &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: watched}}, client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), "failed calling webhook"), nil
	})
	if err != nil {
		t.Fatalf("a create while the webhook's Service is gone: %v, want the failure policy's refusal", last)
	}
	if err := k.Delete(ctx, vc); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		last = k.Get(ctx, client.ObjectKeyFromObject(vc), vc)
		return apierrors.IsNotFound(last), nil
	})
	if err != nil {
		t.Fatalf("the cluster is not deleted while the webhook is down: %v, finalizers %v", last, vc.Finalizers)
	}
}
