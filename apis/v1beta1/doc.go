// Package v1beta1 is version v1beta1 of the valkey.fsm.dev API.
//
// +kubebuilder:object:generate=true
// +groupName=valkey.fsm.dev
package v1beta1
