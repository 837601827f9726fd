package v1beta1

import "k8s.io/apimachinery/pkg/api/resource"

// Defaults that depend on another field, which a CRD default cannot express: the API server
// stores the spec without them, and the operator (or the mutating webhook) applies them.
const (
	// DefaultShards is the shard count of a Cluster topology that does not set one.
	DefaultShards = int32(3)
	// DefaultDurableStorageSize is a Durable pod's volume: the append-only file and
	// snapshots of the data set, with room to rewrite them.
	DefaultDurableStorageSize = "10Gi"
	// DefaultCacheStorageSize is a Cache pod's volume: it holds no data files, only the
	// node's replication state.
	DefaultCacheStorageSize = "1Gi"
	// DefaultSecretKey is the key of a SecretKeyRef that names none.
	DefaultSecretKey = "password"
)

// DefaultReplicas is spec.replicas when unset: none for Standalone, which has no replica,
// and 1 for Replication and Cluster, the least that survives losing a pod. An unset topology
// is Replication, the CRD's default.
func DefaultReplicas(t Topology) int32 {
	if t == TopologyStandalone {
		return 0
	}
	return 1
}

// ReplicasOrDefault is spec.replicas, or its default for the spec's topology when unset.
func (s *ValkeyClusterSpec) ReplicasOrDefault() int32 {
	if s.Replicas != nil {
		return *s.Replicas
	}
	return DefaultReplicas(s.Topology)
}

// DefaultStorageSize is spec.storage.size when unset: 1Gi for Cache, 10Gi for Durable (and
// for an unset profile, which the CRD defaults to Durable).
func DefaultStorageSize(p Profile) resource.Quantity {
	if p == ProfileCache {
		return resource.MustParse(DefaultCacheStorageSize)
	}
	return resource.MustParse(DefaultDurableStorageSize)
}
