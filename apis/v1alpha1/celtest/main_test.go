package celtest

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// serviceRange is this package's ClusterIP range. Nothing here creates a Service, but the API
// server allocates from the range at start, and nothing may ever use a non-loopback one.
const serviceRange = "127.254.0.0/16"

// crdDir is where hack/controller-gen.sh writes the CRDs, relative to this package.
const crdDir = "../../../charts/valkey-operator/crds"

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
	bin, err := kubeassets.Dir()
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
