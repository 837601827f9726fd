package operatorsuite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// helm runs the project's pinned helm against the local cluster.
func helm(t testing.TB, args ...string) string {
	t.Helper()
	return helmOn(t, cl.KubeconfigPath(), args...)
}

// helmOn runs the project's pinned helm against the cluster of kubeconfig.
func helmOn(t testing.TB, kubeconfig string, args ...string) string {
	t.Helper()
	root, err := kubeassets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "helm.sh"), append(args, "--kubeconfig", kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestChartRunsTheOperatorAsAPodUnderItsRBAC installs the Helm chart: the operator runs as a
// Pod (from the operator's image as make image builds it from this repository) with the chart's
// ServiceAccount and least-privilege RBAC, its journal on a claim, and runs a cluster.
func TestChartRunsTheOperatorAsAPodUnderItsRBAC(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	const ns = "valkey-operator-system"
	// The operator's namespace enforces Pod Security "restricted": the chart's pod must pass it.
	restricted := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if err := k.Create(context.Background(), restricted); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The chart takes over the CRDs (as an upgrade from a chart that shipped them in crds/
	// does) and points their conversion at its operator.
	leaveCRDsAsAnOlderChartDid(t)
	helm(t, "install", "valkey-operator", "../../charts/valkey-operator", "--namespace", ns, "--create-namespace", "--take-ownership",
		"--set", "retryInterval=1s", "--set", "replicas=1", "--wait", "--timeout", "3m")
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
	// Not as root: the process really runs as the chart's user.
	pid, err := cl.ContainerPID(ns, op.Name, "operator")
	if err != nil {
		t.Fatal(err)
	}
	if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err != nil || !strings.Contains(string(status), "Uid:\t65532\t65532") {
		t.Fatalf("the operator does not run as 65532: %s (%v)", firstLines(string(status), "Uid:"), err)
	}
	// From the image make image builds: the running program is the image's /valkey-operator.
	if running, err := os.ReadFile(fmt.Sprintf("/proc/%d/exe", pid)); err != nil {
		t.Fatal(err)
	} else if shipped, err := os.ReadFile(operatorBinary); err != nil || !bytes.Equal(running, shipped) {
		t.Fatalf("the operator pod does not run the image's binary %s (%v)", operatorBinary, err)
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
	// The cluster below is written as v1alpha1 and stored as v1beta1: converted by the pod.
	checkChartConvertsCRDs(t, ns, "valkey-operator", tns)
	if err := k.Create(ctx, newCluster(tns, "charted", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	// SIGKILL the operator in the middle of bootstrapping: the container restarts (a new
	// process, the same journal file on its claim) and finishes the job.
	waitFor(t, tns, "charted", time.Minute, "bootstrapping started", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.State == v1alpha1.StateBootstrapping
	})
	if err := cl.KillContainer(ns, op.Name, "operator"); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, tns, "charted", 3*time.Minute, "Steady under the chart-installed operator after a SIGKILL", steadyWith(3))
	checkReplication(t, vc, 2)
	checkHistoryChains(t, vc)
	restarted, err := cl.Clientset().CoreV1().Pods(ns).Get(ctx, op.Name, metav1.GetOptions{})
	if err != nil || restarted.Status.ContainerStatuses[0].RestartCount < 1 {
		t.Fatalf("the operator container was not restarted: %v", err)
	}
	// Its metrics count the transitions it persisted, and only who may read them reads them.
	body := checkMetricsNeedTheRight(t, ns, restarted.Status.PodIP+":8080", "valkey-operator-metrics-reader")
	for _, want := range []string{"valkey_operator_cluster_state{", "valkey_operator_cluster_state_since_seconds{"} {
		if !strings.Contains(body, want) {
			t.Errorf("operator metrics lack %s", want)
		}
	}
	// kubectl valkey history --full reads the journal through the API server, which proxies
	// to the operator as the chart's APIService says. The local cluster's API server refuses
	// loopback Endpoints, so its Service cannot select the pod: it becomes an ExternalName
	// naming the pod's address (in a real cluster the chart's Service works as it is).
	pointJournalServiceAtPod(t, ns, "valkey-operator-journal", nil)
	out, err := exec.Command(pluginBinary(t), "history", "charted", "-n", tns, "--full", "--kubeconfig", cl.KubeconfigPath()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Bootstrapping -> Steady") {
		t.Fatalf("kubectl valkey history --full: %v\n%s", err, out)
	}
	// Its journal is on the claim the chart made.
	err = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pvc, err := cl.Clientset().CoreV1().PersistentVolumeClaims(ns).Get(ctx, "journal-valkey-operator-0", metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, nil
	})
	if err != nil {
		t.Fatalf("the journal claim is not bound: %v", err)
	}
}

// canI asks the API server (a SubjectAccessReview, as kubectl auth can-i does) whether the
// operator's ServiceAccount may do verb on resource in any namespace.
func canI(t *testing.T, ns, verb, resource string) bool {
	t.Helper()
	group := ""
	switch resource {
	case "statefulsets":
		group = "apps"
	case "clusterroles":
		group = "rbac.authorization.k8s.io"
	}
	review, err := cl.Clientset().AuthorizationV1().SubjectAccessReviews().Create(ctxFor(t, 10*time.Second), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + ns + ":valkey-operator",
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return review.Status.Allowed
}

// pluginBinary builds kubectl-valkey once per test run.
func pluginBinary(t *testing.T) string {
	t.Helper()
	root, err := kubeassets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, ".cache", "bin", "kubectl-valkey-e2e")
	cmd := exec.Command("go", "build", "-o", bin, "./plugin")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-valkey: %v\n%s", err, out)
	}
	return bin
}

// TestChartNamespacedModeNeedsNoClusterWideRights installs the chart in namespaced mode
// (watchNamespaces): the operator's ServiceAccount gets a Role in the watched namespace and,
// cluster-wide, only TokenReviews and SubjectAccessReviews. It runs a cluster there, and
// never touches one in another namespace, which it may not even read.
func TestChartNamespacedModeNeedsNoClusterWideRights(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	const opNS = "vo-scoped"
	watched, other := cl.Namespace(t), cl.Namespace(t)
	helm(t, "install", "vo-scoped", "../../charts/valkey-operator", "--namespace", opNS, "--create-namespace",
		"--set", "retryInterval=1s", "--set", "watchNamespaces={"+watched+"}",
		"--set", "journal.persistence.enabled=false", "--set", "journal.api.enabled=false", "--set", "replicas=1", "--set", "crds.enabled=false", "--wait", "--timeout", "3m")
	t.Cleanup(func() {
		helm(t, "uninstall", "vo-scoped", "--namespace", opNS, "--wait", "--timeout", "2m")
	})
	ctx := ctxFor(t, 3*time.Minute)
	sa := "system:serviceaccount:" + opNS + ":vo-scoped"
	for _, c := range []struct {
		ns, verb, group, resource string
		want                      bool
	}{
		{watched, "create", "apps", "statefulsets", true},
		{watched, "list", "", "secrets", true},
		{other, "list", "", "secrets", false},
		{other, "get", "", "secrets", false},
		{other, "list", "valkey.fsm.dev", "valkeyclusters", false},
		{"", "list", "", "pods", false},
		{"", "create", "authentication.k8s.io", "tokenreviews", true},
	} {
		review, err := cl.Clientset().AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + opNS},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.ns, Verb: c.verb, Group: c.group, Resource: c.resource},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != c.want {
			t.Errorf("namespaced operator can %s %s/%s in %q: %v, want %v", c.verb, c.group, c.resource, c.ns, review.Status.Allowed, c.want)
		}
	}
	for _, ns := range []string{watched, other} {
		if err := k.Create(ctx, newCluster(ns, "scoped", v1alpha1.TopologyStandalone, 1)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, watched, "scoped", 2*time.Minute, "Steady under the namespaced operator", steadyWith(1))
	var untouched v1alpha1.ValkeyCluster
	if err := k.Get(ctx, client.ObjectKey{Namespace: other, Name: "scoped"}, &untouched); err != nil {
		t.Fatal(err)
	}
	if untouched.Status.State != "" || len(untouched.Finalizers) != 0 {
		t.Errorf("the cluster outside the watched namespace was touched: state %q, finalizers %v", untouched.Status.State, untouched.Finalizers)
	}
}

// pointJournalServiceAtPod points the chart's journal Service at the operator's pod (see
// localcluster.PointServiceAtPod) and waits until the API server serves the journal API.
func pointJournalServiceAtPod(t *testing.T, ns, name string, selector map[string]string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	if err := cl.PointServiceAtPod(ctx, ns, name, selector); err != nil {
		t.Fatal(err)
	}
	waitJournalAPIServed(t, ctx)
}
