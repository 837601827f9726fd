package serviceproxy

import (
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
)

// Address plan of this package's tests (other packages use other 127.x ranges, so test
// binaries running in parallel never collide):
//
//	127.250.0.0/17    Service ClusterIPs, allocated by the API server
//	127.250.200.0/24+ Pod IPs, assigned by the tests
const serviceRange = "127.250.0.0/17"

// One real API server and etcd for the whole package: starting them takes seconds, and each
// test isolates itself in its own namespace and deletes what it created.
var server = testapiserver.Server{ServiceRange: serviceRange}

func TestMain(m *testing.M) { testapiserver.Main(m, &server) }

// cluster starts the package's control plane on first use (building the binaries the first
// time on this machine) and returns a client of it.
func cluster(tb testing.TB) (kubernetes.Interface, *rest.Config) {
	tb.Helper()
	_, cfg := server.Start(tb)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return cs, cfg
}
