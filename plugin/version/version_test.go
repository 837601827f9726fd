package version

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
	"github.com/valkey-fsm/valkey-operator/internal/version"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// The API server creates no Service here; the range only has to be loopback and its own.
var server = testapiserver.Server{ServiceRange: "127.247.0.0/16", Then: writeKubeconfig}

var shared struct {
	core       kubernetes.Interface
	kubeconfig string
}

func TestMain(m *testing.M) { testapiserver.Main(m, &server) }

// writeKubeconfig makes the file the plugin reads, as a user's would be.
func writeKubeconfig(env *envtest.Environment, cfg *rest.Config) error {
	var err error
	if shared.core, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kubectl-valkey-version-")
	if err != nil {
		return err
	}
	shared.kubeconfig = filepath.Join(dir, "kubeconfig")
	return os.WriteFile(shared.kubeconfig, data, 0o600)
}

// kubectlValkeyVersion runs the verb under a root with kubectl's connection flags, as
// plugin/main.go registers it.
func kubectlValkeyVersion(t *testing.T, args ...string) string {
	t.Helper()
	flags := kube.NewFlags()
	root := &cobra.Command{Use: "kubectl-valkey", SilenceUsage: true, SilenceErrors: true}
	flags.AddFlags(root.PersistentFlags())
	root.AddCommand(NewCmd(flags))
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs(append([]string{"version"}, args...))
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("version %v failed (it never should): %v\n%s", args, err, out.String())
	}
	return out.String()
}

// The plugin's own line comes first in every case, and the operator's workloads are found by
// label in any namespace, a StatefulSet (the chart's) as well as a Deployment.
func TestVersionShowsThePluginAndTheOperatorsImage(t *testing.T) {
	server.Start(t)
	self := "kubectl-valkey " + version.String() + "\n"
	out := kubectlValkeyVersion(t, "--kubeconfig", shared.kubeconfig)
	if want := self + "operator: not found (no Deployment or StatefulSet labelled app.kubernetes.io/name=valkey-operator in any namespace)\n"; out != want {
		t.Fatalf("with no operator:\n%s\nwant:\n%s", out, want)
	}

	ctx := context.Background()
	labels := map[string]string{"app.kubernetes.io/name": "valkey-operator"}
	for _, ns := range []string{"valkey-operator-system", "elsewhere"} {
		if _, err := shared.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(containers ...corev1.Container) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: containers}}
	}
	sel := &metav1.LabelSelector{MatchLabels: labels}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "valkey-operator", Labels: labels}, Spec: appsv1.StatefulSetSpec{
		Selector: sel, Template: pod(corev1.Container{Name: "operator", Image: "ghcr.io/valkey-fsm/valkey-operator:0.1.0"}),
	}}
	if _, err := shared.core.AppsV1().StatefulSets("valkey-operator-system").Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The operator's container is found by name, not by position.
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "vko", Labels: labels}, Spec: appsv1.DeploymentSpec{
		Selector: sel, Template: pod(corev1.Container{Name: "proxy", Image: "proxy:1"}, corev1.Container{Name: "operator", Image: "registry.example/vko:v0.3.0"}),
	}}
	if _, err := shared.core.AppsV1().Deployments("elsewhere").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Not the operator: no label.
	other := dep.DeepCopy()
	other.Name, other.Labels = "unrelated", map[string]string{"app": "unrelated"}
	if _, err := shared.core.AppsV1().Deployments("elsewhere").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out = kubectlValkeyVersion(t, "--kubeconfig", shared.kubeconfig, "-n", "default")
	want := self +
		"operator: registry.example/vko:v0.3.0 (Deployment elsewhere/vko)\n" +
		"operator: ghcr.io/valkey-fsm/valkey-operator:0.1.0 (StatefulSet valkey-operator-system/valkey-operator)\n"
	if out != want {
		t.Fatalf("with two operators:\n%s\nwant:\n%s", out, want)
	}
	if out := kubectlValkeyVersion(t, "--kubeconfig", shared.kubeconfig, "--client"); out != self {
		t.Fatalf("--client asked the cluster:\n%s", out)
	}
}

// Without a reachable cluster the plugin still prints its version and says why it cannot tell
// the operator's, without failing.
func TestVersionWithoutACluster(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// Port 1 on loopback: nothing listens, the connection is refused at once.
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: x}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out := kubectlValkeyVersion(t, "--kubeconfig", kubeconfig)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || lines[0] != "kubectl-valkey "+version.String() || !strings.HasPrefix(lines[1], "operator: unknown (") || !strings.Contains(lines[1], "refused") {
		t.Fatalf("without a cluster:\n%s", out)
	}
	out = kubectlValkeyVersion(t, "--kubeconfig", filepath.Join(t.TempDir(), "missing"))
	if !strings.Contains(out, "operator: unknown (") {
		t.Fatalf("without a kubeconfig:\n%s", out)
	}
}
