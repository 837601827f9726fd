package celtest

import (
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
)

// One API server for the whole package, with the CRDs hack/controller-gen.sh writes; every
// test works in its own namespace. Nothing here creates a Service, but the API server
// allocates ClusterIPs from the range at start.
var server = testapiserver.Server{ServiceRange: "127.254.0.0/16", CRDDir: "../../../charts/valkey-operator/files/crds"}

func TestMain(m *testing.M) { testapiserver.Main(m, &server) }

// apiServer starts the package's API server with the CRDs installed on first use and returns
// a dynamic client of it. Tests send unstructured objects, so that each sends exactly the
// JSON under test (an omitted field stays omitted) rather than what a Go struct marshals to.
func apiServer(tb testing.TB) dynamic.Interface {
	tb.Helper()
	dyn, err := dynamic.NewForConfig(config(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return dyn
}

// config is the package's API server's client configuration.
func config(tb testing.TB) *rest.Config {
	tb.Helper()
	_, cfg := server.Start(tb)
	return cfg
}
