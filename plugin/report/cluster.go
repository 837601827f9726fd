package report

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// clusterYAML is the ValkeyCluster as the API server has it (spec, status and metadata, as a
// newer operator's fields are kept in the unstructured object), without managedFields, which
// say who wrote what and weigh more than the rest.
func clusterYAML(u *unstructured.Unstructured) ([]byte, error) {
	u = u.DeepCopy()
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	return yaml.Marshal(u.Object)
}

// objectYAML is any object without its managedFields.
func objectYAML(obj any) ([]byte, error) {
	b, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "managedFields")
	}
	return yaml.Marshal(m)
}
