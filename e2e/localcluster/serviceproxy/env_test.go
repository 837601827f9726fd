package serviceproxy

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// Address plan of this package's tests (other packages use other 127.x ranges, so test
// binaries running in parallel never collide):
//
//	127.250.0.0/17    Service ClusterIPs, allocated by the API server
//	127.250.200.0/24+ Pod IPs, assigned by the tests
const serviceRange = "127.250.0.0/17"

// One real API server and etcd for the whole package: starting them takes seconds, and each
// test isolates itself in its own namespace and deletes what it created.
var shared struct {
	once sync.Once
	env  *envtest.Environment
	cfg  *rest.Config
	cs   kubernetes.Interface
	err  error
}

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's logger; without one it prints a warning
	// with a stack trace instead.
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if shared.env != nil {
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// cluster starts the package's control plane on first use (building the binaries the first
// time on this machine) and returns a client of it.
func cluster(tb testing.TB) (kubernetes.Interface, *rest.Config) {
	tb.Helper()
	shared.once.Do(func() {
		dir, err := kubeassets.Dir()
		if err != nil {
			shared.err = err
			return
		}
		env := &envtest.Environment{BinaryAssetsDirectory: dir}
		// Loopback ClusterIPs, never the default 10.0.0.0/24.
		env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", serviceRange)
		cfg, err := env.Start()
		if err != nil {
			_ = env.Stop()
			shared.err = fmt.Errorf("starting envtest: %w", err)
			return
		}
		shared.env, shared.cfg = env, cfg
		shared.cs, shared.err = kubernetes.NewForConfig(cfg)
	})
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.cs, shared.cfg
}
