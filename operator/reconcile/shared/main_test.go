package shared

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
)

// One API server for the tests that need one (started on first use, with the chart's CRDs);
// the others do not start it.
var server = testapiserver.Server{ServiceRange: "127.252.0.0/16", CRDDir: "../../../charts/valkey-operator/files/crds"}

func TestMain(m *testing.M) { testapiserver.Main(m, &server) }

// apiClient is a client of the package's API server, with the operator's scheme.
func apiClient(t *testing.T) client.Client {
	t.Helper()
	_, cfg := server.Start(t)
	c, err := client.New(cfg, client.Options{Scheme: testScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newNamespace makes a namespace of the package's API server for one test (its name generated
// from prefix) and deletes it after the test.
func newNamespace(t *testing.T, c client.Client, prefix string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return ns
}

// testScheme has the Kubernetes kinds and ours.
func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1beta1.AddToScheme(s))
	return s
}
