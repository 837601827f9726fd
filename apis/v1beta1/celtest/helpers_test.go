package celtest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/internal/celtesting"
)

var (
	clustersGVR = v1beta1.SchemeGroupVersion.WithResource("valkeyclusters")
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
	return celtesting.Object(t, v1beta1.SchemeGroupVersion.String(), "ValkeyCluster", name, spec)
}

func parseYAML(t *testing.T, doc string) map[string]any { return celtesting.ParseYAML(t, doc) }

func check(t *testing.T, err error, want string) { t.Helper(); celtesting.Check(t, err, want) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
