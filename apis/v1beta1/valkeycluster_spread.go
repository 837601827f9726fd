package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
