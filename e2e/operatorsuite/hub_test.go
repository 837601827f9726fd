package operatorsuite

import (
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// hubStore is store as v1beta1 spells it (credentialsSecretRef for credentialsSecret), through
// the API's own conversion, for a test that writes a v1beta1 field naming a store.
func hubStore(store v1alpha1.BackupStore) *v1beta1.BackupStore {
	vc := &v1alpha1.ValkeyCluster{Spec: v1alpha1.ValkeyClusterSpec{RestoreFrom: &v1alpha1.RestoreSource{Store: &store}}}
	hub := &v1beta1.ValkeyCluster{}
	if err := vc.ConvertTo(hub); err != nil {
		panic(err) // a v1alpha1 object always converts; an error is a bug of the conversion
	}
	return hub.Spec.RestoreFrom.Store
}
