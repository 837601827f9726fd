package v1alpha1

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// MaxMemoryPercent is the share of the container's memory limit that maxmemory defaults to.
// The rest is headroom Valkey needs beyond its data set: the copy-on-write pages of a
// snapshot or AOF rewrite fork, replication and client output buffers, and allocator
// fragmentation. Above roughly two thirds a busy Durable primary gets OOM-killed while
// forking.
const MaxMemoryPercent = 60

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

// MinReplicasToWrite is spec.durability.minReplicasToWrite with its default: 1 for a Durable
// cluster with replicas (a primary cut off from every replica stops accepting writes), 0 for
// a Cache or a Standalone cluster.
func MinReplicasToWrite(spec *ValkeyClusterSpec) int32 {
	if spec.Durability.MinReplicasToWrite != nil {
		return *spec.Durability.MinReplicasToWrite
	}
	if spec.Topology != TopologyStandalone && spec.Profile != ProfileCache && spec.Replicas != 1 {
		return 1
	}
	return 0
}

// IsEnabled reports whether authentication is on; unset means on, the safe default.
func (a AuthSpec) IsEnabled() bool { return a.Enabled == nil || *a.Enabled }

// IsEnabled reports whether the operator keeps a PodDisruptionBudget; unset means yes.
func (p PodDisruptionBudgetSpec) IsEnabled() bool { return p.Enabled == nil || *p.Enabled }

// SizeOrDefault returns the volume size, or the default size when unset.
func (s StorageSpec) SizeOrDefault() resource.Quantity {
	if s.Size == nil {
		return resource.MustParse(DefaultStorageSize)
	}
	return s.Size.DeepCopy()
}

// KeyOrDefault returns the Secret key that holds the password, or the default key when unset.
func (r SecretKeyReference) KeyOrDefault() string {
	if r.Key == "" {
		return DefaultSecretKey
	}
	return r.Key
}

// MaxMemoryBytes returns MaxMemoryPercent of a memory limit, in bytes, rounded down, and
// false when there is no limit (zero or negative), in which case Valkey gets no maxmemory.
func MaxMemoryBytes(limit resource.Quantity) (int64, bool) {
	v := limit.Value()
	if v <= 0 {
		return 0, false
	}
	// v*60/100 could overflow for limits near the int64 maximum; this cannot.
	return v/100*MaxMemoryPercent + v%100*MaxMemoryPercent/100, true
}

// MaxMemory returns the maxmemory directive's value for spec: config's maxmemory when set
// (in any letter case), else MaxMemoryPercent of the valkey container's memory limit in
// bytes. It returns false when neither is set, and then the operator writes no maxmemory.
func MaxMemory(spec *ValkeyClusterSpec) (string, bool) {
	if v, ok := LookupConfig(spec.Config, "maxmemory"); ok {
		return string(v), true
	}
	limit, ok := spec.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		return "", false
	}
	n, ok := MaxMemoryBytes(limit)
	if !ok {
		return "", false
	}
	return strconv.FormatInt(n, 10), true
}

// ProfileDirectives returns the valkey.conf directives a profile sets, as name to the
// argument text written after the name (so `save ""` turns snapshots off). The operator
// renders them and spec.config may not override them (they are in OperatorOwnedDirectives).
//
// Cache evicts least recently used keys and writes nothing to disk. Durable refuses writes
// when memory is full and keeps both an append-only file (every write, fsynced every second
// unless config sets appendfsync) and RDB snapshots on Valkey's default schedule, which make
// restarts and full resyncs fast.
func ProfileDirectives(p Profile) map[string]string {
	switch p {
	case ProfileCache:
		return map[string]string{
			"maxmemory-policy": "allkeys-lru",
			"appendonly":       "no",
			"save":             `""`,
		}
	case ProfileDurable:
		return map[string]string{
			"maxmemory-policy": "noeviction",
			"appendonly":       "yes",
			"save":             "3600 1 300 100 60 10000",
		}
	}
	return nil
}

// Topology keys the default spread constraints use.
const (
	ZoneTopologyKey     = "topology.kubernetes.io/zone"
	HostnameTopologyKey = "kubernetes.io/hostname"
)

// DefaultTopologySpreadConstraints returns the constraints the operator gives the pods when
// spec.topologySpreadConstraints is empty: spread over zones and over hosts with maxSkew 1,
// both ScheduleAnyway. Losing a zone or a node then loses as few pods as the cluster allows,
// while a cluster with fewer zones or nodes than pods still schedules them all. selector
// selects the pods of one ValkeyCluster.
func DefaultTopologySpreadConstraints(selector *metav1.LabelSelector) []corev1.TopologySpreadConstraint {
	constraint := func(key string) corev1.TopologySpreadConstraint {
		return corev1.TopologySpreadConstraint{
			MaxSkew:           1,
			TopologyKey:       key,
			WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:     selector.DeepCopy(),
		}
	}
	return []corev1.TopologySpreadConstraint{constraint(ZoneTopologyKey), constraint(HostnameTopologyKey)}
}

func ptrTo[T any](v T) *T { return &v }
