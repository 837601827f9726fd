package valkeyapi

import (
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// HubOf is vc as the operator reads it: converted to v1beta1, the hub, and defaulted. The
// suites create v1alpha1 objects (which exercises the conversion); what the operator derives
// from a cluster (names, objects) takes the hub's.
func HubOf(vc *v1alpha1.ValkeyCluster) *v1beta1.ValkeyCluster {
	hub := &v1beta1.ValkeyCluster{}
	if err := vc.DeepCopy().ConvertTo(hub); err != nil {
		panic(err) // a v1alpha1 object always converts; an error is a bug of the conversion
	}
	v1beta1.SetDefaults(&hub.Spec)
	return hub
}
