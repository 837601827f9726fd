package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// One API server for the whole package, with the CRDs hack/controller-gen.sh writes; each
// test works in its own namespace. Nothing here creates a Service, but the API server
// allocates ClusterIPs from the range at start.
var server = testapiserver.Server{
	ServiceRange: "127.253.0.0/16",
	CRDDir:       "../charts/valkey-operator/files/crds",
	Then:         clients,
	Stopping: func() {
		if shared.dir != "" {
			_ = os.RemoveAll(shared.dir)
		}
	},
}

// shared holds what the tests use of the server: clients, and the kubeconfig file the
// plugin reads.
var shared struct {
	dyn        dynamic.Interface
	core       kubernetes.Interface
	kubeconfig string
	dir        string
}

func TestMain(m *testing.M) { testapiserver.Main(m, &server) }

// apiServer starts the package's API server with the CRDs installed on first use.
func apiServer(tb testing.TB) {
	tb.Helper()
	server.Start(tb)
}

func clients(env *envtest.Environment, cfg *rest.Config) error {
	var err error
	if shared.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	if shared.core, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	// The plugin connects as a user would: through a kubeconfig file.
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	if shared.dir, err = os.MkdirTemp("", "kubectl-valkey-test-"); err != nil {
		return err
	}
	shared.kubeconfig = filepath.Join(shared.dir, "kubeconfig")
	return os.WriteFile(shared.kubeconfig, kubeconfig, 0o600)
}

// namespace creates a namespace for one test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	apiServer(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := shared.core.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// createCluster creates a ValkeyCluster with the API server's defaults.
func createCluster(t *testing.T, ns, name string) {
	t.Helper()
	createClusterWith(t, ns, name, v1beta1.ValkeyClusterSpec{})
}

// createClusterWith creates a ValkeyCluster of spec, the API server defaulting the rest.
func createClusterWith(t *testing.T, ns, name string, spec v1beta1.ValkeyClusterSpec) {
	t.Helper()
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
	u, err := kube.Unstructured(vc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.ClusterResource(shared.dyn, ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// writeStatus replaces the cluster's status through the status subresource, as the
// operator does.
func writeStatus(t *testing.T, ns, name string, st v1beta1.ValkeyClusterStatus) {
	t.Helper()
	ctx := context.Background()
	res := kube.ClusterResource(shared.dyn, ns)
	u, err := res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vc, err := kube.Typed(u)
	if err != nil {
		t.Fatal(err)
	}
	vc.Status = st
	if u, err = kube.Unstructured(vc); err != nil {
		t.Fatal(err)
	}
	if _, err := res.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// annotation is the cluster's annotation key as the API server has it ("" when absent).
func annotation(t *testing.T, ns, name, key string) string {
	t.Helper()
	u, err := kube.ClusterResource(shared.dyn, ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u.GetAnnotations()[key]
}

// syncBuffer is a buffer a running command writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runCommand runs kubectl-valkey in-process with the test kubeconfig and the fixed clock.
func runCommand(ctx context.Context, stdout, stderr *syncBuffer, args ...string) error {
	root := newRootCommand(clock)
	root.SetArgs(append(args, "--kubeconfig", shared.kubeconfig))
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}

// kubectlValkey runs a command to its end and returns its output.
func kubectlValkey(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr syncBuffer
	err := runCommand(ctx, &stdout, &stderr, args...)
	if s := stderr.String(); s != "" {
		t.Logf("stderr of %v:\n%s", args, s)
	}
	return stdout.String(), err
}

// eventually waits until cond holds, for at most 30 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
