package celtest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

var (
	clustersGVR   = v1alpha1.SchemeGroupVersion.WithResource("valkeyclusters")
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
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "ValkeyCluster",
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

// typed decodes what the API server returned into the Go type, through JSON as a client does.
func typed(t *testing.T, u *unstructured.Unstructured) *v1alpha1.ValkeyCluster {
	t.Helper()
	data, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	var c v1alpha1.ValkeyCluster
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	return &c
}

// unstructuredOf encodes a Go object as a client would send it: through encoding/json, so
// that omitempty decides what is left for the API server to default.
func unstructuredOf(t *testing.T, c *v1alpha1.ValkeyCluster) *unstructured.Unstructured {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
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
	case !strings.Contains(err.Error(), want):
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
