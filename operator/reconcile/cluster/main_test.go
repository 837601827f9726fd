package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
)

// One API server for the tests that need one (started on first use, with the chart's CRDs);
// the others do not start it.
var server = testapiserver.Server{ServiceRange: "127.235.0.0/16", CRDDir: "../../../charts/valkey-operator/files/crds"}

func TestMain(m *testing.M) { testapiserver.Main(m, &server) }

func apiClient(t *testing.T) client.Client { return server.Client(t) }

func newNamespace(t *testing.T, c client.Client, prefix string) *corev1.Namespace {
	return testapiserver.Namespace(t, c, prefix)
}
