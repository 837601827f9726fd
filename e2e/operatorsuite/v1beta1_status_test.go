package operatorsuite

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// kubectlOut runs kubectl against the local cluster and returns its output, failing the test
// when it fails.
func kubectlOut(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	cmd, err := cl.Kubectl(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// columnOf reads one column of kubectl get's table: the text under header in the row of
// name, by the header's position (kubectl aligns its columns), so that an empty cell reads
// as "" rather than as its neighbour.
func columnOf(t *testing.T, table, name, header string) string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	head := lines[0]
	at := strings.Index(" "+head+" ", " "+header+" ")
	if at < 0 {
		t.Fatalf("kubectl get shows no %s column:\n%s", header, table)
	}
	end := len(head)
	if next := strings.IndexFunc(head[at+len(header):], func(r rune) bool { return r != ' ' }); next >= 0 {
		end = at + len(header) + next
	}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 && f[0] == name {
			if at >= len(l) {
				return ""
			}
			return strings.TrimSpace(l[at:min(end, len(l))])
		}
	}
	t.Fatalf("kubectl get shows no row %s:\n%s", name, table)
	return ""
}

// TestKubectlShowsTheVersionAndScalesTheReplicas: kubectl get vkc shows the Valkey version the
// nodes report (INFO server), the scale subresource shows the replicas of the primary and the
// pods' selector, and kubectl scale --replicas changes spec.replicas, which the operator
// carries out: one replica more, a pod more.
func TestKubectlShowsTheVersionAndScalesTheReplicas(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 4*time.Minute)
	vc := newCluster(ns, "scaled", v1alpha1.TopologyReplication, 2) // v1alpha1 counts pods: one replica
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "scaled", 2*time.Minute, "Steady", steadyWith(2))

	reported := map[string]bool{}
	for _, v := range nodeVersions(t, vc) {
		reported[v] = true
	}
	if len(reported) != 1 {
		t.Fatalf("the nodes report versions %v, want one", reported)
	}
	var version string
	for v := range reported {
		version = v
	}
	table := kubectlOut(t, ctx, "get", "vkc", "scaled", "-n", ns)
	if got := columnOf(t, table, "scaled", "VERSION"); got != version {
		t.Fatalf("kubectl get vkc shows VERSION %q, the nodes report %s:\n%s", got, version, table)
	}

	scale := kubectlOut(t, ctx, "get", "vkc", "scaled", "-n", ns, "--subresource=scale", "-o", "jsonpath={.spec.replicas} {.status.replicas} {.status.selector}")
	selector := kubectlOut(t, ctx, "get", "vkc", "scaled", "-n", ns, "-o", "jsonpath={.status.selector}")
	if want := "1 1 " + selector; scale != want || !strings.Contains(selector, kube.LabelCluster+"=scaled") {
		t.Fatalf("the scale subresource reads %q, want %q (spec and status replicas 1, the pods' selector)", scale, want)
	}
	if pods, err := cl.Clientset().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector}); err != nil || len(pods.Items) != 2 {
		t.Fatalf("status.selector %q selects %d pods (%v), want the cluster's 2", selector, len(pods.Items), err)
	}

	kubectlOut(t, ctx, "scale", "vkc", "scaled", "-n", ns, "--replicas=2")
	vc = waitFor(t, ns, "scaled", 2*time.Minute, "Steady with one replica more", steadyWith(3))
	if vc.Spec.Replicas != 3 {
		t.Errorf("after kubectl scale --replicas=2, v1alpha1 reads spec.replicas %d pods, want 3", vc.Spec.Replicas)
	}
	scale = kubectlOut(t, ctx, "get", "vkc", "scaled", "-n", ns, "--subresource=scale", "-o", "jsonpath={.spec.replicas} {.status.replicas}")
	if scale != "2 2" {
		t.Fatalf("after the scale-up the scale subresource reads %q, want \"2 2\"", scale)
	}
}
