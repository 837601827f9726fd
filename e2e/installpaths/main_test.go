package installpaths

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

var cl *localcluster.Cluster

// TestMain starts one local cluster that runs the operator's image as make image builds it
// from this tree, under the chart's default reference: make deploy-operator installs exactly
// what a user's cluster would pull.
func TestMain(m *testing.M) {
	root, err := kubeassets.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	layout, err := localcluster.BuildOperatorImage(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "building the operator's image:", err)
		os.Exit(1)
	}
	os.Exit(localcluster.RunTests(m, "installpaths", localcluster.Options{OperatorLayout: layout}, &cl))
}

// makeCmd prepares `make target vars...` at the repository's root against the local cluster:
// KUBECONFIG is its admin's, KUBECTL the control plane's kubectl. It runs in a process group of
// its own, so that stopping it stops what make started.
func makeCmd(t *testing.T, target string, vars ...string) *exec.Cmd {
	t.Helper()
	if cl == nil {
		t.Skip("no local cluster")
	}
	root, err := kubeassets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kubectl, err := localcluster.KubectlPath()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", append([]string{"--no-print-directory", target, "KUBECTL=" + kubectl}, vars...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cl.KubeconfigPath(), "HELM_CACHE_HOME="+t.TempDir(),
		"HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// runMake runs make target to its end and fails the test when it fails.
func runMake(t *testing.T, target string, vars ...string) string {
	t.Helper()
	start := time.Now()
	out, err := makeCmd(t, target, vars...).CombinedOutput()
	if err != nil {
		t.Fatalf("make %s %s: %v\n%s", target, strings.Join(vars, " "), err, out)
	}
	t.Logf("make %s: %s", target, time.Since(start).Round(time.Second))
	return string(out)
}

// inventory is every object the API server lists (but Events), as group/resource
// namespace/name. Any group it cannot discover or list is an error: a partial inventory
// would hide what is left.
func inventory(ctx context.Context) (map[string]bool, error) {
	cfg := rest.CopyConfig(cl.RESTConfig())
	cfg.WarningHandler = rest.NoWarnings{} // deprecated kinds (Endpoints) are listed all the same
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || r.Name == "events" || !slices.Contains(r.Verbs, "list") {
				continue
			}
			items, err := mc.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", r.Name, err)
			}
			for _, it := range items.Items {
				out[fmt.Sprintf("%s/%s %s/%s", gv.Group, r.Name, it.Namespace, it.Name)] = true
			}
		}
	}
	return out, nil
}

// added is what now holds and before did not, sorted.
func added(before, now map[string]bool) []string {
	var out []string
	for k := range now {
		if !before[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// repoPath is a path under the repository's root.
func repoPath(t *testing.T, rel string) string {
	t.Helper()
	root, err := kubeassets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}
