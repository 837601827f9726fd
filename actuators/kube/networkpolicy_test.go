package kube

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// spec.networkPolicy renders one ingress policy over the cluster's pods: its own pods on every
// port (replication and the cluster bus, which has no named port), the operator (the chart's
// label by default, or the peer given) and the user's peers on the Valkey ports only.
func TestANetworkPolicyLetsInThePodsTheOperatorAndTheListedPeers(t *testing.T) {
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	v1beta1.SetDefaults(&vc.Spec)
	if d := Build(vc, metav1.OwnerReference{}); d.NetworkPolicy != nil || d.Names.Policy != "c" {
		t.Fatalf("disabled: policy %v (name %q)", d.NetworkPolicy, d.Names.Policy)
	}
	app := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "app"}}}
	vc.Spec.NetworkPolicy = v1beta1.NetworkPolicySpec{Enabled: true, From: []networkingv1.NetworkPolicyPeer{app}}
	np := Build(vc, metav1.OwnerReference{}).NetworkPolicy
	if np == nil {
		t.Fatal("enabled: no policy")
	}
	if np.Spec.PodSelector.MatchLabels[LabelCluster] != "c" || len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Fatalf("policy selects %v, types %v", np.Spec.PodSelector, np.Spec.PolicyTypes)
	}
	if len(np.Spec.Ingress) != 3 {
		t.Fatalf("%d ingress rules, want own pods, operator, listed peers", len(np.Spec.Ingress))
	}
	own, op, peers := np.Spec.Ingress[0], np.Spec.Ingress[1], np.Spec.Ingress[2]
	if len(own.Ports) != 0 || own.From[0].PodSelector.MatchLabels[LabelCluster] != "c" || own.From[0].NamespaceSelector != nil {
		t.Errorf("own pods rule %+v: want every port from this cluster's pods in its namespace", own)
	}
	if op.From[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "valkey-operator" || op.From[0].NamespaceSelector == nil || len(op.From[0].NamespaceSelector.MatchLabels) != 0 {
		t.Errorf("operator rule %+v: want the chart's label in any namespace", op)
	}
	for _, r := range []networkingv1.NetworkPolicyIngressRule{op, peers} {
		if len(r.Ports) != 2 || r.Ports[0].Port.IntVal != 6379 || r.Ports[1].Port.IntVal != 6380 {
			t.Errorf("rule %+v: want the Valkey ports only", r)
		}
	}
	if peers.From[0].PodSelector.MatchLabels["role"] != "app" {
		t.Errorf("listed peers %+v", peers.From)
	}
	vc.Spec.NetworkPolicy.Operator = &networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": "ops"}}}
	vc.Spec.NetworkPolicy.From = nil
	np = Build(vc, metav1.OwnerReference{}).NetworkPolicy
	if len(np.Spec.Ingress) != 2 || np.Spec.Ingress[1].From[0].NamespaceSelector.MatchLabels["name"] != "ops" || np.Spec.Ingress[1].From[0].PodSelector != nil {
		t.Errorf("operator given: rules %+v", np.Spec.Ingress)
	}
}
