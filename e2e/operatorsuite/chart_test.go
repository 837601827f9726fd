package operatorsuite

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// helm runs the project's pinned helm against the local cluster.
func helm(t testing.TB, args ...string) string {
	t.Helper()
	root, err := kubeassets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "helm.sh"), append(args, "--kubeconfig", cl.KubeconfigPath())...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestChartRunsTheOperatorAsAPodUnderItsRBAC installs the Helm chart: the operator runs as a
// Pod (the operator image maps to the binary built from this repository) with the chart's
// ServiceAccount and least-privilege RBAC, its journal on a claim, and runs a cluster.
func TestChartRunsTheOperatorAsAPodUnderItsRBAC(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	const ns = "valkey-operator-system"
	helm(t, "install", "valkey-operator", "../../charts/valkey-operator", "--namespace", ns, "--create-namespace",
		"--set", "image.tag=dev", "--set", "probeInterval=1s", "--wait", "--timeout", "3m")
	t.Cleanup(func() {
		helm(t, "uninstall", "valkey-operator", "--namespace", ns, "--wait", "--timeout", "2m")
	})
	ctx := ctxFor(t, 4*time.Minute)
	pods, err := cl.Clientset().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=valkey-operator"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("want one operator pod, got %v, %v", pods, err)
	}
	op := pods.Items[0]
	if op.Spec.ServiceAccountName != "valkey-operator" {
		t.Fatalf("the operator runs as %q", op.Spec.ServiceAccountName)
	}
	// The ServiceAccount may do what the operator needs and no more.
	for _, c := range []struct {
		verb, resource string
		want           bool
	}{{"patch", "pods", true}, {"create", "statefulsets", true}, {"create", "pods", false}, {"delete", "nodes", false}, {"create", "clusterroles", false}} {
		if got := canI(t, ns, c.verb, c.resource); got != c.want {
			t.Errorf("operator can %s %s: %v, want %v", c.verb, c.resource, got, c.want)
		}
	}
	tns := cl.Namespace(t)
	if err := k.Create(ctx, newCluster(tns, "charted", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, tns, "charted", 3*time.Minute, "Steady under the chart-installed operator", steadyWith(3))
	checkReplication(t, vc, 2)
	// Its journal is on the claim the chart made.
	err = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pvc, err := cl.Clientset().CoreV1().PersistentVolumeClaims(ns).Get(ctx, "valkey-operator-journal", metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, nil
	})
	if err != nil {
		t.Fatalf("the journal claim is not bound: %v", err)
	}
}

// canI asks the API server whether the operator's ServiceAccount may do verb on resource.
func canI(t *testing.T, ns, verb, resource string) bool {
	t.Helper()
	out, _ := exec.Command("kubectl", "--kubeconfig", cl.KubeconfigPath(), "auth", "can-i", verb, resource,
		"--as", "system:serviceaccount:"+ns+":valkey-operator", "--all-namespaces").CombinedOutput()
	return strings.TrimSpace(string(out)) == "yes"
}
