package v1beta1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

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

// Defaults the API server applies from the +kubebuilder:default markers, repeated for objects
// built in Go (tests, the simulator) and for objects stored before a default existed.
const (
	DefaultTopology = TopologyReplication
	DefaultProfile  = ProfileDurable
	DefaultImage    = "valkey/valkey:8.0"
	// DefaultRotationGracePeriod is how long old passwords keep working after a rotation.
	DefaultRotationGracePeriod = 10 * time.Minute
	// DefaultBackupRetention is how many completed scheduled backups are kept.
	DefaultBackupRetention = int32(7)
	DefaultStoreRegion     = "us-east-1"
	DefaultStoreChecksums  = "WhenSupported"
	DefaultIssuerKind      = "Issuer"
	DefaultIssuerGroup     = "cert-manager.io"
)

// SetDefaults fills in every unset field of spec that has a default: those the API server
// applies from the CRD and those that depend on another field (replicas by topology, shards,
// the volume's size by profile), which only the operator or the mutating webhook can apply.
// It never overrides a value that is set, and applying it twice changes nothing.
func SetDefaults(spec *ValkeyClusterSpec) {
	if spec.Topology == "" {
		spec.Topology = DefaultTopology
	}
	if spec.Profile == "" {
		spec.Profile = DefaultProfile
	}
	if spec.Image == "" {
		spec.Image = DefaultImage
	}
	if spec.Replicas == nil {
		spec.Replicas = ptr.To(DefaultReplicas(spec.Topology))
	}
	if spec.Topology == TopologyCluster && spec.Shards == 0 {
		spec.Shards = DefaultShards
	}
	setSentinelDefaults(spec)
	if spec.Storage.Size == nil {
		size := DefaultStorageSize(spec.Profile)
		spec.Storage.Size = &size
	}
	if spec.Auth.Enabled == nil {
		spec.Auth.Enabled = ptr.To(true)
	}
	if spec.Auth.RotationGracePeriod == nil {
		spec.Auth.RotationGracePeriod = &metav1.Duration{Duration: DefaultRotationGracePeriod}
	}
	if r := spec.Auth.PasswordSecretRef; r != nil && r.Key == "" {
		r.Key = DefaultSecretKey
	}
	if spec.TLS.Mode == "" {
		spec.TLS.Mode = TLSDisabled
	}
	if r := spec.TLS.IssuerRef; r != nil {
		if r.Kind == "" {
			r.Kind = DefaultIssuerKind
		}
		if r.Group == "" {
			r.Group = DefaultIssuerGroup
		}
	}
	if s := spec.Service; s != nil && s.Type == "" {
		s.Type = corev1.ServiceTypeClusterIP
	}
	if spec.PodDisruptionBudget.Enabled == nil {
		spec.PodDisruptionBudget.Enabled = ptr.To(true)
	}
	if spec.Failover.ProbeIntervalSeconds == 0 {
		spec.Failover.ProbeIntervalSeconds = 1
	}
	if spec.Failover.FailureThreshold == 0 {
		spec.Failover.FailureThreshold = 3
	}
	if spec.Durability.MaxLagSeconds == 0 {
		spec.Durability.MaxLagSeconds = 2
	}
	if spec.Backup != nil {
		SetStoreDefaults(&spec.Backup.Store)
		if spec.Backup.Retention.Count == nil {
			spec.Backup.Retention.Count = ptr.To(DefaultBackupRetention)
		}
	}
	if spec.RestoreFrom != nil && spec.RestoreFrom.Store != nil {
		SetStoreDefaults(spec.RestoreFrom.Store)
	}
}

// SetStoreDefaults fills in a store's defaulted fields as the API server does.
func SetStoreDefaults(s *BackupStore) {
	if s.Region == "" {
		s.Region = DefaultStoreRegion
	}
	if s.Checksums == "" {
		s.Checksums = DefaultStoreChecksums
	}
}

// AuthEnabled is s.auth.enabled with its default (on).
func AuthEnabled(s *ValkeyClusterSpec) bool { return s.Auth.Enabled == nil || *s.Auth.Enabled }
