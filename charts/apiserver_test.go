package charts

import (
	"context"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/internal/celtesting"
	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
)

// An API server for the package with the operator chart's CRDs and the operator's conversion
// webhook, started by the first test that asks for it.
var server = testapiserver.Server{ServiceRange: "127.248.0.0/16", CRDDir: "valkey-operator/files/crds"}

func TestMain(m *testing.M) { testapiserver.Main(m, &server) }

// TestTheClusterChartsFullValuesPassTheAPIServer: what values.schema.json cannot check (the
// CRDs' CEL rules: exclusive fields, what a field needs beside it) the API server checks at
// install. ci/full-values.yaml, which sets every field, renders objects the API server accepts
// as they are (a server-side dry run with unknown fields refused), so the file stays an example
// of values that install.
func TestTheClusterChartsFullValuesPassTheAPIServer(t *testing.T) {
	_, cfg := server.Start(t)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := celtesting.Namespace(t, dyn)
	out, err := render(t, "valkey-cluster", filepath.Join("valkey-cluster", "ci", "full-values.yaml"))
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	resources := map[string]string{"ValkeyCluster": "valkeyclusters", "ValkeyACL": "valkeyacls"}
	for _, o := range objects(t, out) {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(o.raw, &u.Object); err != nil {
			t.Fatal(err)
		}
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		if err != nil {
			t.Fatal(err)
		}
		u.SetNamespace(ns)
		_, err = dyn.Resource(gv.WithResource(resources[u.GetKind()])).Namespace(ns).Create(context.Background(), &u,
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
		if err != nil {
			t.Errorf("the API server refuses the rendered %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}
