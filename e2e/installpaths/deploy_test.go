package installpaths

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

var valkeyClusters = schema.GroupVersionResource{Group: "valkey.fsm.dev", Version: "v1beta1", Resource: "valkeyclusters"}

// TestDeployAndUndeployLeaveNothingBehind: make deploy-operator installs the operator as
// written (the chart's defaults: its namespace, the CRDs, two replicas of the image the chart
// names) and it runs a cluster; make undeploy-operator refuses while a ValkeyCluster would go
// with the CRDs, and once it is deleted removes everything: every object the API server lists
// afterwards (Events aside) was there before the deploy. That covers the namespace, the CRDs,
// ClusterRoles and bindings, webhook configurations, the APIService, the journal's claims and
// volumes, and the leader's Lease, which the operator made itself.
func TestDeployAndUndeployLeaveNothingBehind(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	before := takeInventory(ctx, t)

	out := runMake(t, "deploy-operator")
	t.Cleanup(func() {
		if t.Failed() {
			_, _ = makeCmd(t, "undeploy-operator", "KEEP_CRDS=1").CombinedOutput()
		}
	})
	if !strings.Contains(out, "is installed: release valkey-operator in namespace valkey-operator-system") {
		t.Errorf("make deploy-operator did not print the chart's notes:\n%s", out)
	}
	const ns = "valkey-operator-system"
	// The local cluster gives selector Services no endpoints (pods are on loopback addresses):
	// the journal's APIService and the conversion webhook reach a pod by name instead, as a
	// cluster's Services would.
	for _, svc := range []string{"valkey-operator-journal", "valkey-operator-webhook"} {
		if err := cl.PointServiceAtPod(ctx, ns, svc, nil); err != nil {
			t.Fatal(err)
		}
	}
	// The leader's Lease: made by the operator, not by the chart.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cl.Clientset().CoordinationV1().Leases(ns).Get(ctx, "valkey-operator.valkey.fsm.dev", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no leader election Lease: %v", err)
	}

	// A ValkeyCluster reconciled by the deployed operator; undeploy refuses to take it with
	// the CRDs.
	tns := cl.Namespace(t)
	if _, err := cl.ApplyFile(ctx, repoPath(t, "config/samples/standalone-cache.yaml"), tns); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cl.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	waitSteady(ctx, t, dyn, tns)
	refused, err := makeCmd(t, "undeploy-operator").CombinedOutput()
	if err == nil || !strings.Contains(string(refused), "valkeycluster.valkey.fsm.dev/") {
		t.Fatalf("make undeploy-operator with a ValkeyCluster left: %v\n%s", err, refused)
	}
	names, err := dyn.Resource(valkeyClusters).Namespace(tns).List(ctx, metav1.ListOptions{})
	if err != nil || len(names.Items) != 1 {
		t.Fatalf("the refused undeploy touched the ValkeyCluster: %v %v", names, err)
	}
	name := names.Items[0].GetName()
	if err := dyn.Resource(valkeyClusters).Namespace(tns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(valkeyClusters).Namespace(tns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the ValkeyCluster was not deleted: %v", err)
	}
	// The test's namespace goes now, so that only what undeploy should remove is left.
	if err := cl.Clientset().CoreV1().Namespaces().Delete(ctx, tns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	runMake(t, "undeploy-operator")
	checkNothingLeft(ctx, t, before)
}

// checkNothingLeft waits (two minutes: the garbage collector and the volume provisioner finish
// after the deletes) until every object the API server lists was in before.
func checkNothingLeft(ctx context.Context, t *testing.T, before map[string]bool) {
	t.Helper()
	var left []string
	var lastErr error
	deadline := time.Now().Add(2 * time.Minute)
	for {
		now, err := inventory(ctx)
		if lastErr = err; err == nil {
			if left = added(before, now); len(left) == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind (last inventory error: %v):\n%s", lastErr, strings.Join(left, "\n"))
		}
		time.Sleep(time.Second)
	}
}

// takeInventory is inventory, failing the test on an error.
func takeInventory(ctx context.Context, t *testing.T) map[string]bool {
	t.Helper()
	inv, err := inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// waitSteady waits until the namespace's one ValkeyCluster is Steady with every node ready.
func waitSteady(ctx context.Context, t *testing.T, dyn dynamic.Interface, ns string) {
	t.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := dyn.Resource(valkeyClusters).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false, nil
		}
		status, _ := list.Items[0].Object["status"].(map[string]any)
		state, _ := status["state"].(string)
		ready, _ := status["readyNodes"].(string)
		last = state + " " + ready
		n := strings.Split(ready, "/")
		return state == "Steady" && len(n) == 2 && n[0] == n[1] && n[0] != "0", nil
	})
	if err != nil {
		t.Fatalf("the ValkeyCluster is not Steady with every node ready (last: %s): %v", last, err)
	}
}

// TestUndeployKeepsANamespaceItDidNotMake: deployed into a namespace that was there before,
// make undeploy-operator leaves the namespace and removes what it held of the operator (the
// journal's claims, the leader's Lease) besides the release and the CRDs it created.
func TestUndeployKeepsANamespaceItDidNotMake(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := cl.Namespace(t) // the user's, made before the deploy
	before := takeInventory(ctx, t)

	runMake(t, "deploy-operator", "OPERATOR_NAMESPACE="+ns, "HELM_ARGS=--set replicas=1")
	t.Cleanup(func() {
		if t.Failed() {
			_, _ = makeCmd(t, "undeploy-operator", "OPERATOR_NAMESPACE="+ns).CombinedOutput()
		}
	})
	for _, svc := range []string{"valkey-operator-journal", "valkey-operator-webhook"} {
		if err := cl.PointServiceAtPod(ctx, ns, svc, nil); err != nil {
			t.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		claims, err := cl.Clientset().CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(claims.Items) == 0 {
			return false, nil
		}
		_, err = cl.Clientset().CoordinationV1().Leases(ns).Get(ctx, "valkey-operator.valkey.fsm.dev", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no journal claim or leader election Lease in %s: %v", ns, err)
	}

	runMake(t, "undeploy-operator", "OPERATOR_NAMESPACE="+ns)
	checkNothingLeft(ctx, t, before)
	if _, err := cl.Clientset().CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Errorf("the namespace undeploy did not make: %v", err)
	}
}
