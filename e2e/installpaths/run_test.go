package installpaths

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// TestMakeRunReconcilesAClusterFromOutside: make run builds the operator and runs it here,
// outside the cluster, against the kubeconfig: it installs the CRDs it needs (v1beta1 only:
// nothing converts v1alpha1 without the webhook, so v1alpha1 is refused rather than stored
// half-converted), takes the leader election Lease in its namespace and runs a replicated
// cluster to Steady. make undeploy-operator afterwards removes what make run created.
func TestMakeRunReconcilesAClusterFromOutside(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tns := cl.Namespace(t)
	before := takeInventory(ctx, t)

	const ns = "vo-run"
	run := makeCmd(t, "run", "OPERATOR_NAMESPACE="+ns, "RUN_ARGS=--metrics-bind-address=0 --health-probe-bind-address=0 --retry-interval=1s")
	var log bytes.Buffer
	run.Stdout, run.Stderr = &log, &log
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	stop := func() {
		// Ctrl-C: the whole process group, as a terminal sends it.
		_ = syscall.Kill(-run.Process.Pid, syscall.SIGINT)
		select {
		case err := <-done:
			t.Logf("make run stopped: %v", err) // make reports the interrupted operator
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-run.Process.Pid, syscall.SIGKILL)
			t.Logf("make run killed: %v", <-done)
		}
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
		if t.Failed() {
			t.Logf("make run:\n%s", tail(log.String(), 60))
		}
	})

	dyn, err := dynamic.NewForConfig(cl.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	// The operator holds its Lease once make run has set up and started it (the build comes
	// first: minutes when cold).
	err = wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			done <- err
			return false, fmt.Errorf("make run ended: %v", err)
		default:
		}
		lease, err := cl.Clientset().CoordinationV1().Leases(ns).Get(ctx, "valkey-operator.valkey.fsm.dev", metav1.GetOptions{})
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", nil
	})
	if err != nil {
		t.Fatalf("make run's operator does not lead: %v\n%s", err, tail(log.String(), 40))
	}
	alpha := valkeyClusters
	alpha.Version = "v1alpha1"
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "valkey.fsm.dev/v1alpha1", "kind": "ValkeyCluster", "metadata": map[string]any{"name": "alpha"}}}
	if _, err := dyn.Resource(alpha).Namespace(tns).Create(ctx, obj, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a v1alpha1 ValkeyCluster with the CRDs of make run: %v, want NotFound (not served)", err)
	}

	if _, err := cl.ApplyFile(ctx, repoPath(t, "config/samples/replication.yaml"), tns); err != nil {
		t.Fatal(err)
	}
	waitSteady(ctx, t, dyn, tns)
	// Deleted while the operator runs (it removes its finalizer), then Ctrl-C.
	if err := dyn.Resource(valkeyClusters).Namespace(tns).Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(valkeyClusters).Namespace(tns).Get(ctx, "demo", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the ValkeyCluster was not deleted: %v", err)
	}
	stop()
	stopped = true
	// The cluster's claims stay after it (its spec keeps data): the test's namespace goes, so
	// that only what make run made is left to undeploy.
	if err := cl.Clientset().CoreV1().Namespaces().Delete(ctx, tns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	runMake(t, "undeploy-operator", "OPERATOR_NAMESPACE="+ns)
	checkNothingLeft(ctx, t, before)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
