package celtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// serviceRange is this package's ClusterIP range. Nothing here creates a Service, but the API
// server allocates from the range at start, and nothing may ever use a non-loopback one.
const serviceRange = "127.254.0.0/16"

// crdDir is where hack/controller-gen.sh writes the CRDs, relative to this package.
const crdDir = "../../../charts/valkey-operator/crds"

// binDirEnv names the variable that points at prebuilt etcd and kube-apiserver binaries. It
// is the one e2e/kubeassets reads (kubeassets.EnvDir); this package does not import e2e,
// which the dependency rule and the lint configuration forbid for everything under apis/.
const binDirEnv = "LOCALCLUSTER_BIN_DIR"

// One API server for the whole package: starting it takes seconds, and every test works in
// its own namespace.
var shared struct {
	once sync.Once
	env  *envtest.Environment
	dyn  dynamic.Interface
	err  error
}

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's logger; without one it prints a warning with
	// a stack trace instead.
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if shared.env != nil {
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}
	os.Exit(code)
}

// apiServer starts the package's API server with the CRDs installed on first use and returns
// a dynamic client of it. Tests send unstructured objects, so that each sends exactly the
// JSON under test (an omitted field stays omitted) rather than what a Go struct marshals to.
func apiServer(tb testing.TB) dynamic.Interface {
	tb.Helper()
	shared.once.Do(func() { shared.err = start() })
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.dyn
}

func start() error {
	bin, err := kubeBinaries()
	if err != nil {
		return err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{crdDir},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: bin,
	}
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", serviceRange)
	shared.env = env
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting envtest with the CRDs of %s: %w", crdDir, err)
	}
	if shared.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	return nil
}

// kubeBinaries returns the directory with etcd and kube-apiserver: $LOCALCLUSTER_BIN_DIR,
// or what hack/kube-binaries.sh prints (it builds them once per machine, in minutes, and
// afterwards only prints the cached directory), exactly as e2e/kubeassets.Dir does.
func kubeBinaries() (string, error) {
	if d := os.Getenv(binDirEnv); d != "" {
		return d, nil
	}
	script, err := filepath.Abs("../../../hack/kube-binaries.sh")
	if err != nil {
		return "", err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(context.Background(), script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building Kubernetes binaries with %s: %w\n%s", script, err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}
