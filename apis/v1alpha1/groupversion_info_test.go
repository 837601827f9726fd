package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestAddToScheme(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for kind, obj := range map[string]runtime.Object{"ValkeyCluster": &ValkeyCluster{}, "ValkeyClusterList": &ValkeyClusterList{}} {
		gvks, _, err := scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if len(gvks) != 1 || gvks[0] != SchemeGroupVersion.WithKind(kind) {
			t.Errorf("%s is registered as %v, want %v", kind, gvks, SchemeGroupVersion.WithKind(kind))
		}
	}
	if SchemeGroupVersion.String() != "valkey.fsm.dev/v1alpha1" {
		t.Errorf("SchemeGroupVersion = %s", SchemeGroupVersion)
	}
	if got := Resource("valkeyclusters").String(); got != "valkeyclusters.valkey.fsm.dev" {
		t.Errorf("Resource = %s", got)
	}
}
