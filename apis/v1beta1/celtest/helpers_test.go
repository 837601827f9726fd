package celtest

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

var (
	clustersGVR   = v1beta1.SchemeGroupVersion.WithResource("valkeyclusters")
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// clusters returns the ValkeyCluster client of a fresh namespace of its own for t.
func clusters(t *testing.T) dynamic.ResourceInterface {
	t.Helper()
	return apiServer(t).Resource(clustersGVR).Namespace(namespace(t))
}

// namespace creates a fresh namespace for t and returns its name.
func namespace(t *testing.T) string {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"generateName": "celtest-"},
	}}
	created, err := apiServer(t).Resource(namespacesGVR).Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return created.GetName()
}

// object returns a ValkeyCluster named name whose spec is the YAML spec, sent as written.
// An empty spec string leaves spec out of the object altogether.
func object(t *testing.T, name, spec string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1beta1.SchemeGroupVersion.String(), "kind": "ValkeyCluster",
		"metadata": map[string]any{"name": name},
	}}
	if spec != "" {
		u.Object["spec"] = parseYAML(t, spec)
	}
	return u
}

func parseYAML(t *testing.T, doc string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("test YAML %q: %v", doc, err)
	}
	return m
}

// checkRefused fails t unless err is the API server refusing an invalid object with a message
// containing want.
func checkRefused(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("accepted; want refused with %q", want)
	case !apierrors.IsInvalid(err):
		t.Errorf("error %v is not a validation error; want one with %q", err, want)
	case !contains(err.Error(), want):
		t.Errorf("refused with\n  %v\nwant a message containing\n  %q", err, want)
	}
}

// check fails t unless err matches want: nil for "", else refused with want in the message.
func check(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("refused: %v", err)
		}
		return
	}
	checkRefused(t, err, want)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
