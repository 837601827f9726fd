package kube

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// networkPolicy is spec.networkPolicy's NetworkPolicy (nil when it is not enabled): the
// cluster's pods reach each other on every port (replication, and the cluster bus at the
// client port + 10000, which is not a named container port); the operator and the user's
// peers reach the Valkey ports only. Valkey ports are named, so the rule follows the pod as it
// serves plain, TLS or both.
func networkPolicy(vc *v1beta1.ValkeyCluster, meta metav1.ObjectMeta) *networkingv1.NetworkPolicy {
	np := vc.Spec.NetworkPolicy
	if !np.Enabled {
		return nil
	}
	tcp := ptr.To(corev1.ProtocolTCP)
	valkeyPorts := []networkingv1.NetworkPolicyPort{
		{Protocol: tcp, Port: ptr.To(intstr.FromInt32(valkey.Port))},
		{Protocol: tcp, Port: ptr.To(intstr.FromInt32(valkey.TLSPort))},
	}
	operator := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{},
		PodSelector:       &metav1.LabelSelector{MatchLabels: v1beta1.OperatorPodLabels},
	}
	if np.Operator != nil {
		operator = *np.Operator.DeepCopy()
	}
	rules := []networkingv1.NetworkPolicyIngressRule{
		{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: SelectorLabels(vc)}}}},
		{From: []networkingv1.NetworkPolicyPeer{operator}, Ports: valkeyPorts},
	}
	if vc.Spec.Topology == v1beta1.TopologySentinel {
		// The sentinels watch and reconfigure every data node.
		rules = append(rules, networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: SentinelSelectorLabels(vc)}}}, Ports: valkeyPorts})
	}
	if len(np.From) > 0 {
		from := make([]networkingv1.NetworkPolicyPeer, len(np.From))
		for i := range np.From {
			from[i] = *np.From[i].DeepCopy()
		}
		rules = append(rules, networkingv1.NetworkPolicyIngressRule{From: from, Ports: valkeyPorts})
	}
	return &networkingv1.NetworkPolicy{ObjectMeta: meta, Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: SelectorLabels(vc)},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress:     rules,
	}}
}
