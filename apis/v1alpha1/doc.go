// Package v1alpha1 is version v1alpha1 of the valkey.fsm.dev API: the ValkeyCluster kind, its
// defaults, validation rules (OpenAPI and CEL, enforced by the API server itself) and the
// names of its status conditions.
//
// The package imports only k8s.io/apimachinery and k8s.io/api, so that the operator, the
// kubectl plugin and any client can use it without pulling in controller-runtime.
//
// +kubebuilder:object:generate=true
// +groupName=valkey.fsm.dev
package v1alpha1
