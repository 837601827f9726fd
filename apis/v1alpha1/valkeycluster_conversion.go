package v1alpha1

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// clusterHubFields are the parts of a v1beta1 ValkeyCluster a v1alpha1 one has no field for,
// kept in AnnotationV1beta1Fields (named as in v1beta1).
type clusterHubFields struct {
	// ReplicasUnset: v1beta1's spec.replicas was unset; v1alpha1 shows the pods its topology's
	// default gives, and an unchanged count converts back to unset.
	ReplicasUnset bool `json:"replicasUnset,omitempty"`
	// StorageSizeUnset: the same for spec.storage.size and its profile's default.
	StorageSizeUnset bool `json:"storageSizeUnset,omitempty"`

	ImagePullPolicy    corev1.PullPolicy             `json:"imagePullPolicy,omitempty"`
	ImagePullSecrets   []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	PodLabels          map[string]string             `json:"podLabels,omitempty"`
	PodAnnotations     map[string]string             `json:"podAnnotations,omitempty"`
	PriorityClassName  string                        `json:"priorityClassName,omitempty"`
	ServiceAccountName string                        `json:"serviceAccountName,omitempty"`
	Service            *v1beta1.ServiceSpec          `json:"service,omitempty"`
	Deletion           *v1beta1.DeletionSpec         `json:"deletion,omitempty"`
	// DiscardCurrentData is spec.restoreFrom.discardCurrentData.
	DiscardCurrentData bool `json:"discardCurrentData,omitempty"`
	// TLSDuration and TLSRenewBefore are spec.tls.duration and renewBefore without an
	// issuerRef, where v1alpha1 keeps them.
	TLSDuration    *metav1.Duration `json:"tlsDuration,omitempty"`
	TLSRenewBefore *metav1.Duration `json:"tlsRenewBefore,omitempty"`

	// StatusReplicas, StatusSelector and ValkeyVersion are status.replicas (replicas per
	// primary: v1alpha1's status.replicas counts pods), status.selector and
	// status.valkeyVersion.
	StatusReplicas int32  `json:"statusReplicas,omitempty"`
	StatusSelector string `json:"statusSelector,omitempty"`
	ValkeyVersion  string `json:"valkeyVersion,omitempty"`
	// Sentinel is spec.sentinel of a Sentinel topology, which v1alpha1 shows as Replication
	// (its enum has no Sentinel, and a v1alpha1 client writing the object back would be
	// refused): TopologySentinel says the topology was Sentinel.
	Sentinel         *v1beta1.SentinelSpec `json:"sentinel,omitempty"`
	TopologySentinel bool                  `json:"topologySentinel,omitempty"`
	// SentinelAuth is spec.auth.enabled (with its default) of a Sentinel topology when it was
	// read: v1beta1's rule that it may not change there compares with the spec before, which a
	// conversion does not see, so the annotation carries it.
	SentinelAuth *bool `json:"sentinelAuth,omitempty"`
	// StatusSentinels is status.sentinels.
	StatusSentinels []v1beta1.SentinelStatus `json:"statusSentinels,omitempty"`
	// Phase is status.phase.
	Phase string `json:"phase,omitempty"`
}

// ConvertTo converts this ValkeyCluster to the hub version, v1beta1.
func (src *ValkeyCluster) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*v1beta1.ValkeyCluster)
	if !ok {
		return fmt.Errorf("a v1alpha1 ValkeyCluster converts to a v1beta1 ValkeyCluster, not %T", dstRaw)
	}
	in := src.DeepCopy()
	dst.ObjectMeta = in.ObjectMeta
	dst.Spec = clusterSpecToHub(in.Spec)
	dst.Status = clusterStatusToHub(in.Status)
	var kept clusterHubFields
	found, err := takeHubFields(&dst.ObjectMeta, &kept)
	if err != nil || !found {
		return err
	}
	restoreClusterHubFields(dst, kept)
	// A write through v1alpha1 is checked against v1alpha1's rules only, which do not know the
	// Sentinel topology this object is: what v1beta1's refuse, the conversion refuses (the API
	// server answers the write with this error).
	msg := v1beta1.SentinelRefusal(&dst.Spec)
	if was := kept.SentinelAuth; msg == "" && was != nil && dst.Spec.Topology == v1beta1.TopologySentinel {
		msg = v1beta1.SentinelAuthRefusal(*was, v1beta1.AuthEnabled(&dst.Spec))
	}
	if msg != "" {
		return fmt.Errorf("%s (this ValkeyCluster is a Sentinel topology, which v1alpha1 shows as Replication: v1beta1's rules apply)", msg)
	}
	return nil
}

// ConvertFrom converts the hub version, v1beta1, to this ValkeyCluster.
func (dst *ValkeyCluster) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*v1beta1.ValkeyCluster)
	if !ok {
		return fmt.Errorf("a v1alpha1 ValkeyCluster converts from a v1beta1 ValkeyCluster, not %T", srcRaw)
	}
	in := src.DeepCopy()
	dst.ObjectMeta = in.ObjectMeta
	dst.Spec = clusterSpecFromHub(in.Spec)
	dst.Status = clusterStatusFromHub(in.Status)
	return keepHubFields(&dst.ObjectMeta, clusterHubFieldsOf(in))
}

// clusterHubFieldsOf collects what clusterSpecFromHub and clusterStatusFromHub cannot carry.
func clusterHubFieldsOf(in *v1beta1.ValkeyCluster) clusterHubFields {
	s := in.Spec
	f := clusterHubFields{
		ReplicasUnset:      s.Replicas == nil,
		StorageSizeUnset:   s.Storage.Size == nil,
		ImagePullPolicy:    s.ImagePullPolicy,
		ImagePullSecrets:   s.ImagePullSecrets,
		PodLabels:          s.PodLabels,
		PodAnnotations:     s.PodAnnotations,
		PriorityClassName:  s.PriorityClassName,
		ServiceAccountName: s.ServiceAccountName,
		Service:            s.Service,
		Deletion:           s.Deletion,
		StatusReplicas:     in.Status.Replicas,
		StatusSelector:     in.Status.Selector,
		ValkeyVersion:      in.Status.ValkeyVersion,
		Phase:              in.Status.Phase,
		Sentinel:           s.Sentinel,
		TopologySentinel:   s.Topology == v1beta1.TopologySentinel,
		StatusSentinels:    in.Status.Sentinels,
	}
	if s.RestoreFrom != nil {
		f.DiscardCurrentData = s.RestoreFrom.DiscardCurrentData
	}
	if s.TLS.IssuerRef == nil {
		f.TLSDuration, f.TLSRenewBefore = s.TLS.Duration, s.TLS.RenewBefore
	}
	if f.TopologySentinel {
		auth := v1beta1.AuthEnabled(&s)
		f.SentinelAuth = &auth
	}
	return f
}

// restoreClusterHubFields puts back what the annotation kept. An unset count comes back
// unset only while v1alpha1 still shows its default: a v1alpha1 client that changed it
// meant the new count.
func restoreClusterHubFields(dst *v1beta1.ValkeyCluster, f clusterHubFields) {
	s := &dst.Spec
	if f.TopologySentinel && s.Topology == v1beta1.TopologyReplication {
		s.Topology = v1beta1.TopologySentinel
	}
	s.Sentinel = f.Sentinel
	if f.ReplicasUnset && s.Replicas != nil && *s.Replicas == v1beta1.DefaultReplicas(s.Topology) {
		s.Replicas = nil
	}
	if f.StorageSizeUnset && s.Storage.Size != nil {
		if def := v1beta1.DefaultStorageSize(s.Profile); s.Storage.Size.Cmp(def) == 0 {
			s.Storage.Size = nil
		}
	}
	s.ImagePullPolicy, s.ImagePullSecrets = f.ImagePullPolicy, f.ImagePullSecrets
	s.PodLabels, s.PodAnnotations = f.PodLabels, f.PodAnnotations
	s.PriorityClassName, s.ServiceAccountName = f.PriorityClassName, f.ServiceAccountName
	s.Service, s.Deletion = f.Service, f.Deletion
	if s.RestoreFrom != nil {
		s.RestoreFrom.DiscardCurrentData = f.DiscardCurrentData
	}
	if s.TLS.IssuerRef == nil {
		s.TLS.Duration, s.TLS.RenewBefore = f.TLSDuration, f.TLSRenewBefore
	}
	dst.Status.Replicas, dst.Status.Selector = f.StatusReplicas, f.StatusSelector
	dst.Status.ValkeyVersion, dst.Status.Phase = f.ValkeyVersion, f.Phase
	dst.Status.Sentinels = f.StatusSentinels
}

// replicasToHub: v1alpha1 counts the pods of a shard, the primary included; v1beta1 counts
// the replicas of its primary. An unset v1alpha1 count is its CRD default, three pods.
func replicasToHub(pods int32) *int32 {
	if pods == 0 {
		pods = DefaultReplicas
	}
	replicas := pods - 1
	return &replicas
}

// replicasFromHub is replicasToHub's inverse; an unset v1beta1 count is its topology's
// default, which v1alpha1 shows as the pods it gives.
func replicasFromHub(replicas *int32, topology v1beta1.Topology) int32 {
	if replicas == nil {
		return v1beta1.DefaultReplicas(topology) + 1
	}
	return *replicas + 1
}

// storageSizeToHub: an unset v1alpha1 size is its CRD default, 1Gi, whatever the profile;
// v1beta1's default depends on the profile, so the size is always set.
func storageSizeToHub(size *resource.Quantity) *resource.Quantity {
	if size == nil {
		q := resource.MustParse(DefaultStorageSize)
		return &q
	}
	return size
}

// storageSizeFromHub: an unset v1beta1 size reads as its profile's default.
func storageSizeFromHub(size *resource.Quantity, profile v1beta1.Profile) *resource.Quantity {
	if size == nil {
		q := v1beta1.DefaultStorageSize(profile)
		return &q
	}
	return size
}

func secretKeyRefToHub(in *SecretKeyReference) *v1beta1.SecretKeyRef {
	if in == nil {
		return nil
	}
	return &v1beta1.SecretKeyRef{Name: in.Name, Key: in.Key}
}

func secretKeyRefFromHub(in *v1beta1.SecretKeyRef) *SecretKeyReference {
	if in == nil {
		return nil
	}
	return &SecretKeyReference{Name: in.Name, Key: in.Key}
}

func clusterSpecToHub(in ValkeyClusterSpec) v1beta1.ValkeyClusterSpec {
	return v1beta1.ValkeyClusterSpec{
		Topology:  v1beta1.Topology(in.Topology),
		Profile:   v1beta1.Profile(in.Profile),
		Image:     in.Image,
		Replicas:  replicasToHub(in.Replicas),
		Shards:    in.Shards,
		Resources: in.Resources,
		Storage: v1beta1.StorageSpec{
			Size:             storageSizeToHub(in.Storage.Size),
			StorageClassName: in.Storage.StorageClassName,
		},
		Auth: v1beta1.AuthSpec{
			Enabled:             in.Auth.Enabled,
			PasswordSecretRef:   secretKeyRefToHub(in.Auth.ExistingSecret),
			RotationGracePeriod: in.Auth.RotationGracePeriod,
		},
		TLS:                       tlsSpecToHub(in.TLS),
		Hibernate:                 in.Hibernate,
		NetworkPolicy:             v1beta1.NetworkPolicySpec(in.NetworkPolicy),
		Config:                    convertMap(in.Config, cast[v1beta1.ConfigValue, ConfigValue]),
		NodeSelector:              in.NodeSelector,
		Tolerations:               in.Tolerations,
		Affinity:                  in.Affinity,
		TopologySpreadConstraints: in.TopologySpreadConstraints,
		PodDisruptionBudget:       v1beta1.PodDisruptionBudgetSpec(in.PodDisruptionBudget),
		Failover:                  v1beta1.FailoverSpec(in.Failover),
		Durability:                v1beta1.DurabilitySpec(in.Durability),
		Backup:                    backupSpecToHub(in.Backup),
		RestoreFrom:               restoreSourceToHub(in.RestoreFrom),
	}
}

func clusterSpecFromHub(in v1beta1.ValkeyClusterSpec) ValkeyClusterSpec {
	return ValkeyClusterSpec{
		Topology:  topologyFromHub(in.Topology),
		Profile:   Profile(in.Profile),
		Image:     in.Image,
		Replicas:  replicasFromHub(in.Replicas, in.Topology),
		Shards:    in.Shards,
		Resources: in.Resources,
		Storage: StorageSpec{
			Size:             storageSizeFromHub(in.Storage.Size, in.Profile),
			StorageClassName: in.Storage.StorageClassName,
		},
		Auth: AuthSpec{
			Enabled:             in.Auth.Enabled,
			ExistingSecret:      secretKeyRefFromHub(in.Auth.PasswordSecretRef),
			RotationGracePeriod: in.Auth.RotationGracePeriod,
		},
		TLS:                       tlsSpecFromHub(in.TLS),
		Hibernate:                 in.Hibernate,
		NetworkPolicy:             NetworkPolicySpec(in.NetworkPolicy),
		Config:                    convertMap(in.Config, cast[ConfigValue, v1beta1.ConfigValue]),
		NodeSelector:              in.NodeSelector,
		Tolerations:               in.Tolerations,
		Affinity:                  in.Affinity,
		TopologySpreadConstraints: in.TopologySpreadConstraints,
		PodDisruptionBudget:       PodDisruptionBudgetSpec(in.PodDisruptionBudget),
		Failover:                  FailoverSpec(in.Failover),
		Durability:                DurabilitySpec(in.Durability),
		Backup:                    backupSpecFromHub(in.Backup),
		RestoreFrom:               restoreSourceFromHub(in.RestoreFrom),
	}
}

// Node roles are PascalCase in v1beta1, like its other enums; any other value (none is
// valid) is carried as it is.
var nodeRoleNames = map[NodeRole]v1beta1.NodeRole{
	NodeRolePrimary: v1beta1.NodeRolePrimary,
	NodeRoleReplica: v1beta1.NodeRoleReplica,
	NodeRoleUnknown: v1beta1.NodeRoleUnknown,
}

func nodeRoleToHub(r NodeRole) v1beta1.NodeRole {
	if to, ok := nodeRoleNames[r]; ok {
		return to
	}
	return v1beta1.NodeRole(r)
}

func nodeRoleFromHub(r v1beta1.NodeRole) NodeRole {
	for from, to := range nodeRoleNames {
		if to == r {
			return from
		}
	}
	return NodeRole(r)
}

func clusterStatusToHub(in ValkeyClusterStatus) v1beta1.ValkeyClusterStatus {
	return v1beta1.ValkeyClusterStatus{
		State:              v1beta1.State(in.State),
		ObservedGeneration: in.ObservedGeneration,
		Conditions:         in.Conditions,
		History: convertSlice(in.History, func(h HistoryEntry) v1beta1.HistoryEntry {
			return v1beta1.HistoryEntry{Seq: h.Seq, Time: h.Time, From: v1beta1.State(h.From), To: v1beta1.State(h.To), Event: h.Event, Reason: h.Reason, Message: h.Message}
		}),
		Nodes: convertSlice(in.Nodes, func(n NodeStatus) v1beta1.NodeStatus {
			return v1beta1.NodeStatus{Pod: n.Pod, IP: n.IP, Role: nodeRoleToHub(n.Role), Shard: n.Shard, ReplicationOffset: n.ReplicationOffset, Lag: n.Lag, Ready: n.Ready}
		}),
		Primary:        in.Primary,
		Progress:       in.Progress,
		Waiting:        in.Waiting,
		Slots:          in.Slots,
		ShardCount:     in.ShardCount,
		Shards:         convertSlice(in.Shards, func(s ShardStatus) v1beta1.ShardStatus { return v1beta1.ShardStatus(s) }),
		ReadyNodes:     in.ReadyNodes,
		Pods:           in.Replicas,
		ReadyPods:      in.ReadyReplicas,
		Machine:        machineToHub(in.Machine),
		FailingActions: convertSlice(in.FailingActions, func(a FailingAction) v1beta1.FailingAction { return v1beta1.FailingAction(a) }),
		Restore:        restoreStatusToHub(in.Restore),
		TLS:            tlsStatusToHub(in.TLS),
	}
}

func clusterStatusFromHub(in v1beta1.ValkeyClusterStatus) ValkeyClusterStatus {
	return ValkeyClusterStatus{
		State:              State(in.State),
		ObservedGeneration: in.ObservedGeneration,
		Conditions:         in.Conditions,
		History: convertSlice(in.History, func(h v1beta1.HistoryEntry) HistoryEntry {
			return HistoryEntry{Seq: h.Seq, Time: h.Time, From: State(h.From), To: State(h.To), Event: h.Event, Reason: h.Reason, Message: h.Message}
		}),
		Nodes: convertSlice(in.Nodes, func(n v1beta1.NodeStatus) NodeStatus {
			return NodeStatus{Pod: n.Pod, IP: n.IP, Role: nodeRoleFromHub(n.Role), Shard: n.Shard, ReplicationOffset: n.ReplicationOffset, Lag: n.Lag, Ready: n.Ready}
		}),
		Primary:        in.Primary,
		Progress:       in.Progress,
		Waiting:        in.Waiting,
		Slots:          in.Slots,
		ShardCount:     in.ShardCount,
		Shards:         convertSlice(in.Shards, func(s v1beta1.ShardStatus) ShardStatus { return ShardStatus(s) }),
		ReadyNodes:     in.ReadyNodes,
		Replicas:       in.Pods,
		ReadyReplicas:  in.ReadyPods,
		Machine:        machineFromHub(in.Machine),
		FailingActions: convertSlice(in.FailingActions, func(a v1beta1.FailingAction) FailingAction { return FailingAction(a) }),
		Restore:        restoreStatusFromHub(in.Restore),
		TLS:            tlsStatusFromHub(in.TLS),
	}
}

func restoreStatusToHub(in *RestoreStatus) *v1beta1.RestoreStatus {
	if in == nil {
		return nil
	}
	return &v1beta1.RestoreStatus{
		ID: in.ID, Location: in.Location, Phase: in.Phase, Reason: in.Reason, HistoriesOf: in.HistoriesOf,
		Store: storePtrToHub(in.Store), Path: in.Path, Histories: in.Histories,
	}
}

func restoreStatusFromHub(in *v1beta1.RestoreStatus) *RestoreStatus {
	if in == nil {
		return nil
	}
	return &RestoreStatus{
		ID: in.ID, Location: in.Location, Phase: in.Phase, Reason: in.Reason, HistoriesOf: in.HistoriesOf,
		Store: storePtrFromHub(in.Store), Path: in.Path, Histories: in.Histories,
	}
}

// topologyFromHub is v1beta1's topology as v1alpha1 shows it: Sentinel, which v1alpha1 does
// not know, as Replication, the shape of its data nodes (the annotation keeps the rest).
func topologyFromHub(t v1beta1.Topology) Topology {
	if t == v1beta1.TopologySentinel {
		return TopologyReplication
	}
	return Topology(t)
}
