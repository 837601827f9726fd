// Package v1alpha1 is version v1alpha1 of the valkey.fsm.dev API: the ValkeyCluster kind, its
// defaults, validation rules (OpenAPI and CEL, enforced by the API server itself) and the
// names of its status conditions.
//
// It is served beside v1beta1, the hub and storage version, and converts to and from it
// without loss (*_conversion.go; what v1alpha1 has no field for travels in the
// AnnotationV1beta1Fields annotation).
//
// The package imports k8s.io/apimachinery, k8s.io/api, v1beta1 and, for the conversion
// interfaces only, controller-runtime's pkg/conversion (which itself imports only
// apimachinery), so that the operator, the kubectl plugin and any client can use it without
// the rest of controller-runtime.
//
// +kubebuilder:object:generate=true
// +groupName=valkey.fsm.dev
package v1alpha1
