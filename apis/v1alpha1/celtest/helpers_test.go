package celtest

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	v1alpha1 "github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/internal/celtesting"
)

var (
	clustersGVR = v1alpha1.SchemeGroupVersion.WithResource("valkeyclusters")
)

// clusters returns the ValkeyCluster client of a fresh namespace of its own for t.
func clusters(t *testing.T) dynamic.ResourceInterface {
	t.Helper()
	return apiServer(t).Resource(clustersGVR).Namespace(namespace(t))
}

// namespace creates a fresh namespace for t and returns its name.
func namespace(t *testing.T) string { return celtesting.Namespace(t, apiServer(t)) }

// object returns a ValkeyCluster named name whose spec is the YAML spec, sent as written.
// An empty spec string leaves spec out of the object altogether.
func object(t *testing.T, name, spec string) *unstructured.Unstructured {
	return celtesting.Object(t, v1alpha1.SchemeGroupVersion.String(), "ValkeyCluster", name, spec)
}

func parseYAML(t *testing.T, doc string) map[string]any { return celtesting.ParseYAML(t, doc) }

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

func checkRefused(t *testing.T, err error, want string) {
	t.Helper()
	celtesting.CheckRefused(t, err, want)
}

func check(t *testing.T, err error, want string) { t.Helper(); celtesting.Check(t, err, want) }
