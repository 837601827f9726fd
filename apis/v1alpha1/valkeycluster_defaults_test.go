package v1alpha1

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetDefaultsOnEmptySpec(t *testing.T) {
	var spec ValkeyClusterSpec
	SetDefaults(&spec)
	size := resource.MustParse("1Gi")
	want := ValkeyClusterSpec{
		Topology:            TopologyReplication,
		Profile:             ProfileDurable,
		Image:               "valkey/valkey:8.0",
		Replicas:            3,
		Storage:             StorageSpec{Size: &size},
		Auth:                AuthSpec{Enabled: ptrTo(true), RotationGracePeriod: &metav1.Duration{Duration: 10 * time.Minute}},
		TLS:                 TLSSpec{Mode: TLSDisabled},
		PodDisruptionBudget: PodDisruptionBudgetSpec{Enabled: ptrTo(true)},
		Failover:            FailoverSpec{ProbeIntervalSeconds: 1, FailureThreshold: 3},
		Durability:          DurabilitySpec{MaxLagSeconds: 2},
	}
	if !equality.Semantic.DeepEqual(spec, want) {
		t.Errorf("SetDefaults(empty) =\n%+v\nwant\n%+v", spec, want)
	}
}

func TestSetDefaultsKeepsSetValues(t *testing.T) {
	size := resource.MustParse("5Gi")
	class := "fast"
	spec := ValkeyClusterSpec{
		Topology:            TopologyStandalone,
		Profile:             ProfileCache,
		Image:               "valkey/valkey:8.1",
		Replicas:            1,
		Storage:             StorageSpec{Size: &size, StorageClassName: &class},
		Auth:                AuthSpec{Enabled: ptrTo(false), RotationGracePeriod: &metav1.Duration{Duration: time.Minute}},
		TLS:                 TLSSpec{Mode: TLSBoth, SecretName: "s"},
		PodDisruptionBudget: PodDisruptionBudgetSpec{Enabled: ptrTo(false)},
		Failover:            FailoverSpec{ProbeIntervalSeconds: 5, FailureThreshold: 2},
		Durability:          DurabilitySpec{MinReplicasToWrite: ptrTo(int32(0)), MaxLagSeconds: 7},
	}
	want := *spec.DeepCopy()
	SetDefaults(&spec)
	if !equality.Semantic.DeepEqual(spec, want) {
		t.Errorf("SetDefaults changed set values:\n%+v\nwant\n%+v", spec, want)
	}
}

func TestSetDefaultsSecretKey(t *testing.T) {
	spec := ValkeyClusterSpec{Auth: AuthSpec{ExistingSecret: &SecretKeyReference{Name: "s"}}}
	SetDefaults(&spec)
	if got := spec.Auth.ExistingSecret.Key; got != "password" {
		t.Errorf("existingSecret.key = %q, want password", got)
	}
	spec.Auth.ExistingSecret.Key = "pw"
	SetDefaults(&spec)
	if got := spec.Auth.ExistingSecret.Key; got != "pw" {
		t.Errorf("existingSecret.key = %q after a second SetDefaults, want pw", got)
	}
}
