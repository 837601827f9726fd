package operatorsuite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestTheClusterChartInstallsUpgradesAndUninstallsACluster drives a cluster through Helm
// alone: charts/valkey-cluster installs a ValkeyCluster of a primary and two replicas (3 pods)
// and a ValkeyACL (the operator runs in-process) that reach Steady and Applied; an upgrade with
// a directive that needs a restart rolls the pods one at a time to a new revision and back to
// Steady, the ACL user still working; the uninstall deletes the ValkeyCluster and its ValkeyACL.
func TestTheClusterChartInstallsUpgradesAndUninstallsACluster(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 12*time.Minute)
	const chart = "../../charts/valkey-cluster"
	// The chart holds no password: the ACL user's is a Secret of the namespace.
	pw := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-password"}, StringData: map[string]string{"password": "app-secret"}}
	if err := k.Create(ctx, pw); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	values, upgrade := filepath.Join(dir, "values.yaml"), filepath.Join(dir, "upgrade.yaml")
	for path, content := range map[string]string{
		values: `
labels: {team: shop}
spec:
  replicas: 2
  config:
    maxmemory-samples: "7"
acls:
  - name: app
    user: app
    rules: ["~app:*", "+@read", "+@write", "+ping", "+hello"]
    passwordSecretRefs: [{name: app-password}]
`,
		// databases takes effect only at start: a new revision, rolled.
		upgrade: `spec: {config: {databases: "32"}}`,
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	notes := helm(t, "install", "cache", chart, "--namespace", ns, "--values", values)
	for _, want := range []string{"kubectl valkey status cache -n " + ns, "secret cache-auth -n " + ns, "cache." + ns + ".svc:6379"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the install's notes do not say %q:\n%s", want, notes)
		}
	}
	vc := waitFor(t, ns, "cache", 3*time.Minute, "Steady with 3 ready", steadyWith(3))
	if vc.Labels["team"] != "shop" || vc.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("the ValkeyCluster's labels: %v", vc.Labels)
	}
	waitACL(t, ns, "app", "Applied", "3/3")
	appWrites(t, ctx, vc)

	// The upgrade: one more directive, which needs a restart.
	before := podRevisions(t, ns)
	helm(t, "upgrade", "cache", chart, "--namespace", ns, "--values", values, "--values", upgrade)
	maxDown, downAt := 0, ""
	vc = waitFor(t, ns, "cache", 5*time.Minute, "rolled and Steady", func(vc *v1alpha1.ValkeyCluster) bool {
		if down, pods := podsDown(t, ns, "cache", 3); down > maxDown {
			maxDown, downAt = down, pods
		}
		return everyPodRestarted(t, ns, before, 3)(vc)
	})
	if maxDown > 1 {
		t.Errorf("%d pods were down at once during the roll: %s", maxDown, downAt)
	}
	t.Logf("rolled by helm upgrade: at most %d pod down at once", maxDown)
	rolled := false
	for _, h := range vc.Status.History {
		rolled = rolled || h.To == v1alpha1.StateRolling
	}
	if !rolled {
		t.Errorf("history shows no Rolling:\n%s", summary(vc))
	}
	revisions := map[string]bool{}
	for pod, rev := range podRevisions(t, ns) {
		_, revision, _ := strings.Cut(rev, "/")
		revisions[revision] = true
		if revision == "" || strings.HasSuffix(before[pod], "/"+revision) {
			t.Errorf("pod %s runs revision %q, as before the upgrade (%s)", pod, revision, before[pod])
		}
	}
	if len(revisions) != 1 {
		t.Errorf("the pods run different revisions after the roll: %v", revisions)
	}
	for _, n := range vc.Status.Nodes {
		if got := configOf(t, vc, n.IP, "databases"); got != "32" {
			t.Errorf("%s: databases is %s after the upgrade, want 32", n.Pod, got)
		}
		if got := configOf(t, vc, n.IP, "maxmemory-samples"); got != "7" {
			t.Errorf("%s: maxmemory-samples is %s after the upgrade, want 7 (the first values file)", n.Pod, got)
		}
	}
	waitACL(t, ns, "app", "Applied", "3/3")
	appWrites(t, ctx, vc)

	// The uninstall deletes what the chart made; the operator's finalizer lets the cluster go.
	helm(t, "uninstall", "cache", "--namespace", ns, "--wait", "--timeout", "2m")
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cerr := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cache"}, &v1alpha1.ValkeyCluster{})
		aerr := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &v1alpha1.ValkeyACL{})
		return apierrors.IsNotFound(cerr) && apierrors.IsNotFound(aerr), nil
	})
	if err != nil {
		t.Fatalf("the ValkeyCluster or the ValkeyACL outlived helm uninstall: %v", err)
	}
}

// podsDown is how many of a cluster's n pods are missing, being deleted or not ready, and
// which are up.
func podsDown(t *testing.T, ns, name string, n int) (int, string) {
	t.Helper()
	var pods corev1.PodList
	if err := k.List(ctxFor(t, 10*time.Second), &pods, client.InNamespace(ns), client.MatchingLabels{kube.LabelCluster: name}); err != nil {
		t.Fatal(err)
	}
	var up []string
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				up = append(up, p.Name)
			}
		}
	}
	return n - len(up), "up: " + strings.Join(up, ", ")
}

// appWrites checks that the ValkeyACL user writes its keys on the primary and nothing else.
func appWrites(t *testing.T, ctx context.Context, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	for _, n := range vc.Status.Nodes {
		if n.Role != v1alpha1.NodeRolePrimary {
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, 300*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			return len(nodeAllows(ctx, n, "app", "app-secret", true, true)) == 0, nil
		})
		if err != nil {
			t.Fatalf("user app on %s: %v", n.Pod, nodeAllows(ctx, n, "app", "app-secret", true, true))
		}
	}
}
