package docs

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/valkey-fsm/valkey-operator/internal/celtesting"
)

// elsewhere are the API groups of config/samples whose objects this API server cannot create
// (their CRDs are another project's), with the test that applies them for real.
var elsewhere = map[string]string{
	"cert-manager.io": "e2e/operatorsuite TestSamplesBecomeReady, with cert-manager's CRDs and controllers",
}

// TestEveryObjectOfTheSamplesIsAccepted creates every object of every config/samples file,
// whatever its kind (the Secrets and cert-manager objects beside the clusters; the operator's
// kinds are checked by TestEveryManifestInTheDocsIsAccepted too), with a server-side dry run and
// unknown fields refused, against a real API server with the real CRDs. An object of a group in
// elsewhere is named in the log with the test that applies it; any other kind the server does
// not know fails.
func TestEveryObjectOfTheSamplesIsAccepted(t *testing.T) {
	_, cfg := server.Start(t)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(disc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	ns := celtesting.Namespace(t, dyn)

	files, err := filepath.Glob("../config/samples/*.yaml")
	if err != nil || len(files) < 9 {
		t.Fatalf("config/samples has %d files (%v): the samples moved?", len(files), err)
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(filepath.ToSlash(path), "../")
		line := 1
		created := 0
		for _, doc := range splitDocuments(string(data)) {
			start := line + leadingBlankOrComment(doc.text)
			line += doc.lines
			obj := map[string]any{}
			if err := yamlDecode(doc.text, &obj); err != nil {
				t.Errorf("%s:%d: %v", rel, start, err)
				continue
			}
			if len(obj) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: obj}
			gvk := u.GroupVersionKind()
			if why, ok := elsewhere[gvk.Group]; ok {
				t.Logf("%s:%d: %s %s is applied by %s", rel, start, gvk.Kind, u.GetName(), why)
				continue
			}
			m, err := mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
			if err != nil {
				t.Errorf("%s:%d: %s %s: %v", rel, start, gvk, u.GetName(), err)
				continue
			}
			u.SetNamespace(ns)
			_, err = dyn.Resource(m.Resource).Namespace(ns).Create(context.Background(), u,
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
			if err != nil {
				t.Errorf("%s:%d: the API server refuses %s %s: %v", rel, start, gvk.Kind, u.GetName(), err)
				continue
			}
			created++
		}
		if created == 0 {
			t.Errorf("%s: no object created", rel)
		}
		t.Logf("%s: %d object(s) accepted", rel, created)
	}
}

// yamlDecode reads one YAML document into obj; an empty document leaves obj empty.
func yamlDecode(text string, obj *map[string]any) error {
	err := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096).Decode(obj)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
