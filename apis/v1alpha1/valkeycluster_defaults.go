package v1alpha1

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults the API server applies from the +kubebuilder:default markers of
// valkeycluster_types.go. They are repeated here for objects built in Go (tests, the
// simulator) and for objects stored before a default existed; the celtest suite checks that
// the API server applies exactly these.
const (
	DefaultTopology = TopologyReplication
	DefaultProfile  = ProfileDurable
	DefaultImage    = "valkey/valkey:8.0"
	DefaultReplicas = int32(3)
	// DefaultShards is the shard count of a Cluster topology that does not set one. It has
	// no +kubebuilder:default (a CRD default cannot depend on the topology): the operator
	// applies it, and the API server stores the spec without it.
	DefaultShards      = int32(3)
	DefaultStorageSize = "1Gi"
	DefaultSecretKey   = "password"
	// DefaultRotationGracePeriod is how long old passwords keep working after a rotation.
	DefaultRotationGracePeriod = 10 * time.Minute
)

// SetDefaults fills in every field of spec that the API server would default and that is
// unset, the same way the API server does. It never overrides a value that is set.
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
	if spec.Replicas == 0 {
		spec.Replicas = DefaultReplicas
	}
	if spec.Topology == TopologyCluster && spec.Shards == 0 {
		spec.Shards = DefaultShards
	}
	if spec.Storage.Size == nil {
		size := resource.MustParse(DefaultStorageSize)
		spec.Storage.Size = &size
	}
	if spec.Auth.Enabled == nil {
		spec.Auth.Enabled = ptrTo(true)
	}
	if spec.TLS.Mode == "" {
		spec.TLS.Mode = TLSDisabled
	}
	if spec.Auth.RotationGracePeriod == nil {
		spec.Auth.RotationGracePeriod = &metav1.Duration{Duration: DefaultRotationGracePeriod}
	}
	if spec.Auth.ExistingSecret != nil && spec.Auth.ExistingSecret.Key == "" {
		spec.Auth.ExistingSecret.Key = DefaultSecretKey
	}
	if spec.PodDisruptionBudget.Enabled == nil {
		spec.PodDisruptionBudget.Enabled = ptrTo(true)
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
			spec.Backup.Retention.Count = ptrTo(DefaultBackupRetention)
		}
	}
	if spec.RestoreFrom != nil && spec.RestoreFrom.Store != nil {
		SetStoreDefaults(spec.RestoreFrom.Store)
	}
}

// DefaultBackupRetention is how many completed scheduled backups are kept by default.
const DefaultBackupRetention int32 = 7

// SetStoreDefaults fills in a store's defaulted fields as the API server does.
func SetStoreDefaults(s *BackupStore) {
	if s.Region == "" {
		s.Region = "us-east-1"
	}
	if s.Checksums == "" {
		s.Checksums = "WhenSupported"
	}
}

func ptrTo[T any](v T) *T { return &v }
