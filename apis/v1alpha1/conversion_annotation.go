package v1alpha1

import (
	"encoding/json"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationV1beta1Fields carries, on an object read as v1alpha1, what its v1beta1 form holds
// and v1alpha1 has no field for (the pod knobs, the client Service, status conditions, an
// unset count that v1alpha1 shows as its default ...), as JSON. Converting back to v1beta1
// restores those fields and removes the annotation, so that a v1alpha1 client that reads,
// changes and writes an object loses nothing it could not see. It is the pattern of
// cluster-api's conversion-data annotation, limited to the fields v1alpha1 lacks rather than
// the whole object, so that a v1alpha1 object read from a v1beta1 one without such fields
// carries no annotation at all.
const AnnotationV1beta1Fields = "valkey.fsm.dev/v1beta1-fields"

// keepHubFields records fields on the spoke's metadata, or nothing when fields is its zero
// value: there is then nothing v1alpha1 could lose.
func keepHubFields[T any](meta *metav1.ObjectMeta, fields T) error {
	var zero T
	if apiequality.Semantic.DeepEqual(fields, zero) {
		return nil
	}
	data, err := json.Marshal(fields)
	if err != nil {
		return fmt.Errorf("recording the v1beta1 fields v1alpha1 lacks: %w", err)
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[AnnotationV1beta1Fields] = string(data)
	return nil
}

// takeHubFields reads the fields keepHubFields recorded on the hub's metadata (copied from
// the spoke) into fields and removes the annotation; found is false when there was none.
func takeHubFields[T any](meta *metav1.ObjectMeta, fields *T) (found bool, err error) {
	data, ok := meta.Annotations[AnnotationV1beta1Fields]
	if !ok {
		return false, nil
	}
	delete(meta.Annotations, AnnotationV1beta1Fields)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
	if err := json.Unmarshal([]byte(data), fields); err != nil {
		return false, fmt.Errorf("annotation %s: %w", AnnotationV1beta1Fields, err)
	}
	return true, nil
}
