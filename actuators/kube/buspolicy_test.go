package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// admitted is the NetworkPolicy API's ingress semantics, written here from the API's
// documentation as the oracle of these tests: a pod no policy isolates admits everything;
// an isolated pod admits a connection when one rule of one policy selecting it admits both
// the source (no peers: any source; a pod selector without a namespace selector: pods of the
// policy's namespace) and the port (no ports: every port; no port number: every port of the
// protocol; endPort: a range).
func admitted(pols []*networkingv1.NetworkPolicy, target, src map[string]string, proto corev1.Protocol, port int32) bool {
	isolated := false
	for _, p := range pols {
		if p == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil || !sel.Matches(labels.Set(target)) {
			continue
		}
		ingress := len(p.Spec.PolicyTypes) == 0
		for _, t := range p.Spec.PolicyTypes {
			ingress = ingress || t == networkingv1.PolicyTypeIngress
		}
		if !ingress {
			continue
		}
		isolated = true
		for _, r := range p.Spec.Ingress {
			peerOK := len(r.From) == 0
			for _, f := range r.From {
				if f.NamespaceSelector == nil && f.PodSelector != nil && f.IPBlock == nil {
					s, _ := metav1.LabelSelectorAsSelector(f.PodSelector)
					peerOK = peerOK || s.Matches(labels.Set(src))
				}
			}
			portOK := len(r.Ports) == 0
			for _, pp := range r.Ports {
				pr := corev1.ProtocolTCP
				if pp.Protocol != nil {
					pr = *pp.Protocol
				}
				if pr != proto {
					continue
				}
				if pp.Port == nil {
					portOK = true
					continue
				}
				end := pp.Port.IntVal
				if pp.EndPort != nil {
					end = *pp.EndPort
				}
				portOK = portOK || (pp.Port.IntVal <= port && port <= end)
			}
			if peerOK && portOK {
				return true
			}
		}
	}
	return !isolated
}

// The finding: any pod could reach a Cluster topology's bus and MEET its nodes. Now
// the bus policy exists whatever spec.networkPolicy says and lets only the cluster's own pods
// reach the bus ports; every other port stays as it was (open, without spec.networkPolicy;
// as that policy says, with it).
func TestTheClusterBusAdmitsOnlyTheClustersOwnPods(t *testing.T) {
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	vc.Spec.Topology = v1beta1.TopologyCluster
	v1beta1.SetDefaults(&vc.Spec)
	owner := metav1.OwnerReference{UID: "u", Name: "c"}
	d := Build(vc, owner)
	if d.BusPolicy == nil || d.Names.BusPolicy != "c-bus" || d.BusPolicy.Name != "c-bus" || d.BusPolicy.Namespace != "ns" {
		t.Fatalf("Cluster topology without spec.networkPolicy: bus policy %v (name %q)", d.BusPolicy, d.Names.BusPolicy)
	}
	if len(d.BusPolicy.OwnerReferences) != 1 || d.BusPolicy.OwnerReferences[0].UID != "u" || d.BusPolicy.Labels[LabelCluster] != "c" {
		t.Errorf("bus policy not owned and labelled like the other objects: %+v", d.BusPolicy.ObjectMeta)
	}
	node := SelectorLabels(vc)
	node[LabelShard], node[LabelRole] = "1", RoleReplica // what a running pod carries besides
	stranger := map[string]string{"role": "app"}
	other := SelectorLabels(&v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	pols := []*networkingv1.NetworkPolicy{d.NetworkPolicy, d.BusPolicy}
	for _, bus := range []int32{16379, 16380} {
		if !admitted(pols, node, node, corev1.ProtocolTCP, bus) {
			t.Errorf("the cluster's own pod refused on bus port %d", bus)
		}
		for name, src := range map[string]map[string]string{"a pod that is not a Valkey node": stranger, "another cluster's node": other} {
			if admitted(pols, node, src, corev1.ProtocolTCP, bus) {
				t.Errorf("%s admitted on bus port %d", name, bus)
			}
		}
	}
	for _, port := range []int32{1, 6379, 6380, 9121, 16378, 16381, 65535} {
		if !admitted(pols, node, stranger, corev1.ProtocolTCP, port) {
			t.Errorf("TCP port %d closed to a pod that is not the cluster's: only the bus may be", port)
		}
	}
	if !admitted(pols, node, stranger, corev1.ProtocolUDP, 16379) {
		t.Error("UDP closed: only the bus's TCP ports may be")
	}

	// With spec.networkPolicy the bus policy opens nothing that policy keeps out.
	vc.Spec.NetworkPolicy = v1beta1.NetworkPolicySpec{Enabled: true, From: []networkingv1.NetworkPolicyPeer{
		{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "app"}}},
	}}
	d = Build(vc, owner)
	if d.BusPolicy == nil || d.NetworkPolicy == nil {
		t.Fatalf("with spec.networkPolicy: bus policy %v, policy %v", d.BusPolicy, d.NetworkPolicy)
	}
	pols = []*networkingv1.NetworkPolicy{d.NetworkPolicy, d.BusPolicy}
	for _, c := range []struct {
		what  string
		src   map[string]string
		port  int32
		admit bool
	}{
		{"a listed client on the client port", stranger, 6379, true},
		{"a listed client on the bus", stranger, 16379, false},
		{"an unlisted pod on the client port", other, 6379, false},
		{"an unlisted pod on another port", other, 9121, false},
		{"the cluster's own pod on the bus", node, 16380, true},
	} {
		if got := admitted(pols, node, c.src, corev1.ProtocolTCP, c.port); got != c.admit {
			t.Errorf("%s: admitted %v, want %v", c.what, got, c.admit)
		}
	}

	// The other topologies have no bus: no policy, and Apply deletes one left behind.
	for _, topo := range []v1beta1.Topology{v1beta1.TopologyReplication, v1beta1.TopologyStandalone} {
		vc.Spec.Topology = topo
		if d := Build(vc, owner); d.BusPolicy != nil || d.Names.BusPolicy != "c-bus" {
			t.Errorf("%s: bus policy %v (name %q)", topo, d.BusPolicy, d.Names.BusPolicy)
		}
	}
}
