package celtesting

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
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Namespace creates a fresh namespace for t through c and returns its name.
func Namespace(t *testing.T, c dynamic.Interface) string {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"generateName": "celtest-"},
	}}
	created, err := c.Resource(namespacesGVR).Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return created.GetName()
}

// Object returns an object of apiVersion and kind named name whose spec is the YAML spec,
// sent as written. An empty spec string leaves spec out of the object altogether.
func Object(t *testing.T, apiVersion, kind, name, spec string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name},
	}}
	if spec != "" {
		u.Object["spec"] = ParseYAML(t, spec)
	}
	return u
}

// ParseYAML decodes a test's YAML document.
func ParseYAML(t *testing.T, doc string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("test YAML %q: %v", doc, err)
	}
	return m
}

// CheckRefused fails t unless err is the API server refusing an invalid object with a message
// containing want.
func CheckRefused(t *testing.T, err error, want string) {
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

// Check fails t unless err matches want: nil for "", else refused with want in the message.
func Check(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("refused: %v", err)
		}
		return
	}
	CheckRefused(t, err, want)
}
