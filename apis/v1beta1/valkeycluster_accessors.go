package v1beta1

import "k8s.io/apimachinery/pkg/api/resource"

// MinReplicasToWrite is spec.durability.minReplicasToWrite with its default: 1 for a Durable
// cluster whose primaries have replicas (a primary cut off from every replica stops accepting
// writes), 0 for a Cache or a Standalone cluster, or one without replicas.
func MinReplicasToWrite(spec *ValkeyClusterSpec) int32 {
	if spec.Durability.MinReplicasToWrite != nil {
		return *spec.Durability.MinReplicasToWrite
	}
	if spec.Topology != TopologyStandalone && spec.Profile != ProfileCache && spec.ReplicasOrDefault() != 0 {
		return 1
	}
	return 0
}

// PodsPerShard is how many pods each shard (the one group of a Replication or Standalone
// topology) runs: its primary and spec.replicas replicas. A Standalone cluster is one pod
// whatever spec.replicas says: a cluster created through v1alpha1 stored the CRD's default
// count there, which converts to replicas that Standalone never ran.
func (s *ValkeyClusterSpec) PodsPerShard() int32 {
	if s.Topology == TopologyStandalone {
		return 1
	}
	return s.ReplicasOrDefault() + 1
}

// IsEnabled reports whether authentication is on; unset means on, the safe default.
func (a AuthSpec) IsEnabled() bool { return a.Enabled == nil || *a.Enabled }

// IsEnabled reports whether the operator keeps a PodDisruptionBudget; unset means yes.
func (p PodDisruptionBudgetSpec) IsEnabled() bool { return p.Enabled == nil || *p.Enabled }

// StorageSizeOrDefault returns a copy of the volume size, or the profile's default size when
// unset.
func (s *ValkeyClusterSpec) StorageSizeOrDefault() resource.Quantity {
	if s.Storage.Size == nil {
		return DefaultStorageSize(s.Profile)
	}
	return s.Storage.Size.DeepCopy()
}

// KeyOrDefault returns the Secret key that holds the password, or the default key when unset.
func (r SecretKeyRef) KeyOrDefault() string {
	if r.Key == "" {
		return DefaultSecretKey
	}
	return r.Key
}
