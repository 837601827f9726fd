package kube

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// busPortOffset is how far above its client port a node listens for the cluster bus (Valkey's
// CLUSTER_PORT_INCR; cluster-port is a directive the operator owns and leaves at 0). With
// tls-cluster the bus follows the TLS port.
const busPortOffset = 10000

// BusPorts are the ports the cluster bus of a Cluster topology's nodes listens on: the plain
// client port + 10000, or the TLS port + 10000 when TLS covers the bus. Both are guarded
// whatever the TLS mode, so no mode leaves a bus port open.
var BusPorts = []int32{valkey.Port + busPortOffset, valkey.TLSPort + busPortOffset}

// busPolicy is the NetworkPolicy that guards the cluster bus of a Cluster topology (nil for
// the other topologies, which have no bus). Every node trusts what reaches its bus: a MEET
// from anywhere makes the sender a node of the cluster, and a node that claims slots with a
// higher epoch takes them. So, whatever spec.networkPolicy says, only the cluster's own pods
// reach the bus ports.
//
// A policy that selects a pod isolates its ingress: the pod then admits only the union of
// what every policy selecting it admits. So the bus policy must also admit what it does not
// mean to close, or it would cut the clients off: without spec.networkPolicy it admits every
// other port (TCP and UDP) from anywhere; with it, that rule is left out, since it would let
// in everything spec.networkPolicy keeps out (its own rules already admit the cluster's pods
// on every port).
func busPolicy(vc *v1beta1.ValkeyCluster, meta metav1.ObjectMeta) *networkingv1.NetworkPolicy {
	if vc.Spec.Topology != v1beta1.TopologyCluster {
		return nil
	}
	tcp := ptr.To(corev1.ProtocolTCP)
	var bus []networkingv1.NetworkPolicyPort
	for _, p := range BusPorts {
		bus = append(bus, networkingv1.NetworkPolicyPort{Protocol: tcp, Port: ptr.To(intstr.FromInt32(p))})
	}
	rules := []networkingv1.NetworkPolicyIngressRule{{
		From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: SelectorLabels(vc)}}},
		Ports: bus,
	}}
	if !vc.Spec.NetworkPolicy.Enabled {
		rules = append(rules, networkingv1.NetworkPolicyIngressRule{Ports: allPortsBut(BusPorts)})
	}
	return &networkingv1.NetworkPolicy{ObjectMeta: meta, Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: SelectorLabels(vc)},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress:     rules,
	}}
}

// allPortsBut is every TCP port but the given ones (sorted, ascending), as port ranges, and
// every UDP port: the ports a policy that means to close only those must keep open.
func allPortsBut(closed []int32) []networkingv1.NetworkPolicyPort {
	tcp := ptr.To(corev1.ProtocolTCP)
	var out []networkingv1.NetworkPolicyPort
	from := int32(1)
	for _, p := range slices.Concat(closed, []int32{65536}) {
		if p > from {
			r := networkingv1.NetworkPolicyPort{Protocol: tcp, Port: ptr.To(intstr.FromInt32(from))}
			if p-1 > from {
				r.EndPort = ptr.To(p - 1)
			}
			out = append(out, r)
		}
		from = p + 1
	}
	return append(out, networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolUDP)})
}
