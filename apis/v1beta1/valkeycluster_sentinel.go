package v1beta1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SentinelSpec is the sentinels of a Sentinel topology: valkey-sentinel processes, each in a
// pod of its own with a small volume, that watch the primary, fail it over when a quorum of
// them finds it down, and tell clients where it is (port 26379, group mymaster).
//
// +kubebuilder:validation:XValidation:rule="!has(self.quorum) || self.quorum <= (has(self.replicas) ? self.replicas : 3)",message="sentinel.quorum is more than sentinel.replicas (3 by default): no failover could ever start; lower the quorum or run more sentinels"
type SentinelSpec struct {
	// Replicas is how many sentinels run: an odd number, at least 3. A failover needs a
	// majority of them to elect a leader, so 3 survive losing one, 5 losing two; an even
	// count survives no more losses than the odd one below it. A change is carried out one
	// sentinel at a time, in Steady, each step once every sentinel answers, monitors the
	// primary and knows exactly the others; those left by a removal are reset to forget it.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=3
	// +kubebuilder:validation:Maximum=9
	// +kubebuilder:validation:XValidation:rule="self % 2 == 1",message="sentinel.replicas must be odd (3, 5, 7 or 9): a failover needs a majority of the sentinels, and an even count survives no more losses than the odd count below it"
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Quorum is how many sentinels must find the primary down before a failover starts (the
	// failover still needs a majority of them to elect its leader). Unset, a majority of
	// replicas.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Quorum *int32 `json:"quorum,omitempty"`

	// DownAfter is how long the primary may not answer a sentinel before that sentinel finds
	// it down (down-after-milliseconds). At least 5s: below that, answers of the previous
	// primary's down state can still count towards a new primary's. A Go duration.
	// +kubebuilder:default="5s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s')",message="sentinel.downAfter must be at least 5s: shorter, the sentinels' answers about the previous primary can count towards a failover of the new one"
	// +optional
	DownAfter *metav1.Duration `json:"downAfter,omitempty"`

	// FailoverTimeout bounds each step of a failover (failover-timeout); a failover that did
	// not complete is tried again after twice it. A Go duration.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="sentinel.failoverTimeout must be at least 10s: a failover's replicas must have time to sync from the new primary"
	// +optional
	FailoverTimeout *metav1.Duration `json:"failoverTimeout,omitempty"`

	// Resources are the CPU and memory requests and limits of the sentinel container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Storage is each sentinel's volume. It holds the sentinel's file, which Sentinel
	// rewrites on every change: its identity and the epochs it voted in. A sentinel that
	// lost it would come back as a stranger the others still count, and could vote twice in
	// one epoch. 64Mi by default.
	// +optional
	Storage SentinelStorageSpec `json:"storage,omitempty"`
}

// SentinelStorageSpec is the volume of each sentinel. It is fixed when the cluster is created
// (a StatefulSet's claim template cannot change).
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.storageClassName) || (has(self.storageClassName) && self.storageClassName == oldSelf.storageClassName)",message="sentinel.storage.storageClassName is immutable once set"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.size) || (has(self.size) && quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) == 0)",message="sentinel.storage.size is immutable once set: the sentinels' claims are made once, with the cluster"
type SentinelStorageSpec struct {
	// Size is the capacity of each sentinel's volume (64Mi unset).
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="sentinel.storage.size must be greater than zero"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// StorageClassName is the StorageClass of the volumes; empty means the cluster's default.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// Sentinel defaults, repeated from the markers for objects built in Go.
const (
	DefaultSentinels           = int32(3)
	DefaultSentinelDownAfter   = 5 * time.Second
	DefaultSentinelFailover    = 60 * time.Second
	DefaultSentinelStorageSize = "64Mi"
)

// setSentinelDefaults fills in spec.sentinel for the Sentinel topology (nothing for the others,
// which refuse it).
func setSentinelDefaults(spec *ValkeyClusterSpec) {
	if spec.Topology != TopologySentinel {
		return
	}
	if spec.Sentinel == nil {
		spec.Sentinel = &SentinelSpec{}
	}
	s := spec.Sentinel
	if s.Replicas == 0 {
		s.Replicas = DefaultSentinels
	}
	if s.DownAfter == nil {
		s.DownAfter = &metav1.Duration{Duration: DefaultSentinelDownAfter}
	}
	if s.FailoverTimeout == nil {
		s.FailoverTimeout = &metav1.Duration{Duration: DefaultSentinelFailover}
	}
	if s.Storage.Size == nil {
		size := resource.MustParse(DefaultSentinelStorageSize)
		s.Storage.Size = &size
	}
}

// QuorumOrDefault is spec.sentinel.quorum, or a majority of the sentinels when unset.
func (s *SentinelSpec) QuorumOrDefault() int32 {
	if s.Quorum != nil {
		return *s.Quorum
	}
	return s.Replicas/2 + 1
}

// SentinelStatus is one sentinel as the operator last surveyed it.
type SentinelStatus struct {
	// Pod is the sentinel's pod.
	Pod string `json:"pod"`
	// IP is the pod's address.
	// +optional
	IP string `json:"ip,omitempty"`
	// Answering says the sentinel answered the last survey; the other fields are then its
	// answers.
	Answering bool `json:"answering"`
	// Error is why it did not answer the operator (a refused password, a timeout), when it
	// has a pod that runs.
	// +optional
	Error string `json:"error,omitempty"`
	// Monitoring says it watches the cluster's primary (group mymaster).
	// +optional
	Monitoring bool `json:"monitoring,omitempty"`
	// Primary is the pod it names as the primary (its address when no pod has it).
	// +optional
	Primary string `json:"primary,omitempty"`
	// ConfigEpoch is the epoch of the failover that chose Primary in its view (0: none since
	// it was told the primary).
	// +optional
	ConfigEpoch int64 `json:"configEpoch,omitempty"`
	// OtherSentinels is how many other sentinels it knows.
	// +optional
	OtherSentinels int32 `json:"otherSentinels,omitempty"`
	// FailingOver says it leads a failover; PrimaryDown that a quorum finds the primary down
	// in its view.
	// +optional
	FailingOver bool `json:"failingOver,omitempty"`
	// +optional
	PrimaryDown bool `json:"primaryDown,omitempty"`
}
