package localcluster

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The NetworkPolicy computation without root: which Pod may open a TCP connection to which
// port of which Pod.

func npTestPod(ns, name, ip string, lbls map[string]string, ports ...corev1.ContainerPort) *npPod {
	return &npPod{
		pod: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: ports}}},
		},
		ip: netip.MustParseAddr(ip),
	}
}

func npPolicy(ns string, sel map[string]string, types []networkingv1.PolicyType, rules ...networkingv1.NetworkPolicyIngressRule) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: sel},
			PolicyTypes: types,
			Ingress:     rules,
		},
	}
}

func tcpPort(p int32) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(p))}
}

func fromPods(sel map[string]string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: sel}}
}

func TestNetworkPolicyIngressComputation(t *testing.T) {
	// Namespace a (team=a): server (app=vk, port "valkey" 6379, "bus" 16379), client
	// (role=client), other. Namespace b (team=b): client (role=client), tool.
	srv := npTestPod("a", "server", "127.100.1.1", map[string]string{"app": "vk"},
		corev1.ContainerPort{Name: "valkey", ContainerPort: 6379}, corev1.ContainerPort{Name: "bus", ContainerPort: 16379})
	srv2 := npTestPod("a", "server2", "127.100.1.6", map[string]string{"app": "vk"},
		corev1.ContainerPort{Name: "valkey", ContainerPort: 7000})
	cli := npTestPod("a", "client", "127.100.1.2", map[string]string{"role": "client"})
	other := npTestPod("a", "other", "127.100.1.3", nil)
	bcli := npTestPod("b", "client", "127.100.1.4", map[string]string{"role": "client"})
	btool := npTestPod("b", "tool", "127.100.1.5", nil)
	pods := []*npPod{srv, srv2, cli, other, bcli, btool}
	nsLabels := map[string]map[string]string{
		"a": {"team": "a", corev1.LabelMetadataName: "a"},
		"b": {"team": "b", corev1.LabelMetadataName: "b"},
	}
	vk := map[string]string{"app": "vk"}
	ingress := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}

	type check struct {
		to, from *npPod // from nil: the node
		port     uint16
		want     bool
	}
	cases := []struct {
		name     string
		policies []*networkingv1.NetworkPolicy
		isolated []*npPod
		checks   []check
	}{
		{
			name:   "no policy: nothing isolated",
			checks: []check{{srv, other, 6379, true}, {srv, btool, 1, true}},
		},
		{
			name:     "deny all: only itself and the node",
			policies: []*networkingv1.NetworkPolicy{npPolicy("a", vk, ingress)},
			isolated: []*npPod{srv, srv2},
			checks:   []check{{srv, cli, 6379, false}, {srv, nil, 6379, true}, {srv, srv, 6379, true}, {srv, srv2, 6379, false}, {cli, other, 1, true}},
		},
		{
			name:     "empty from and ports: everyone",
			policies: []*networkingv1.NetworkPolicy{npPolicy("a", vk, ingress, networkingv1.NetworkPolicyIngressRule{})},
			isolated: []*npPod{srv, srv2},
			checks:   []check{{srv, btool, 1, true}, {srv, other, 6379, true}},
		},
		{
			name: "pod selector only: the policy's namespace",
			policies: []*networkingv1.NetworkPolicy{npPolicy("a", vk, ingress, networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{fromPods(map[string]string{"role": "client"})},
			})},
			isolated: []*npPod{srv, srv2},
			checks:   []check{{srv, cli, 6379, true}, {srv, cli, 1, true}, {srv, bcli, 6379, false}, {srv, other, 6379, false}},
		},
		{
			name: "namespace selector only: every pod there",
			policies: []*networkingv1.NetworkPolicy{npPolicy("a", vk, ingress, networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}},
			})},
			isolated: []*npPod{srv, srv2},
			checks:   []check{{srv, bcli, 6379, true}, {srv, btool, 6379, true}, {srv, cli, 6379, false}},
		},
		{
			name: "both selectors in one peer: matching pods in matching namespaces",
			policies: []*networkingv1.NetworkPolicy{npPolicy("a", vk, ingress, networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{},
					PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}},
				}},
			})},
			isolated: []*npPod{srv, srv2},
			checks:   []check{{srv, bcli, 6379, true}, {srv, cli, 6379, true}, {srv, btool, 6379, false}, {srv, other, 6379, false}},
		},
		{
			name: "named port resolves per target, numbers and endPort ranges",
			policies: []*networkingv1.NetworkPolicy{npPolicy("a", vk, ingress, networkingv1.NetworkPolicyIngressRule{
				Ports: []networkingv1.NetworkPolicyPort{
					{Port: ptr.To(intstr.FromString("valkey"))},
					{Port: ptr.To(intstr.FromInt32(20000)), EndPort: ptr.To(int32(20010))},
					{Port: ptr.To(intstr.FromInt32(53)), Protocol: ptr.To(corev1.ProtocolUDP)},
				},
			})},
			isolated: []*npPod{srv, srv2},
			checks: []check{
				{srv, other, 6379, true}, {srv, other, 7000, false}, {srv2, other, 7000, true}, {srv2, other, 6379, false},
				{srv, other, 16379, false}, {srv, other, 20000, true}, {srv, other, 20010, true}, {srv, other, 20011, false},
				{srv, other, 53, false},
			},
		},
		{
			name: "a named port the target lacks admits nothing",
			policies: []*networkingv1.NetworkPolicy{npPolicy("a", map[string]string{"role": "client"}, ingress, networkingv1.NetworkPolicyIngressRule{
				Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("valkey"))}},
			})},
			isolated: []*npPod{cli},
			checks:   []check{{cli, other, 6379, false}, {cli, nil, 6379, true}},
		},
		{
			name: "ipBlock: pods whose IP is in the CIDR and not in an except",
			policies: []*networkingv1.NetworkPolicy{npPolicy("a", vk, ingress, networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "127.100.1.0/29", Except: []string{"127.100.1.3/32"}}}},
			})},
			isolated: []*npPod{srv, srv2},
			checks:   []check{{srv, cli, 6379, true}, {srv, bcli, 6379, true}, {srv, other, 6379, false}, {srv, btool, 6379, true}, {srv, srv2, 6379, true}},
		},
		{
			name: "ipBlock outside loopback selects no pod",
			policies: []*networkingv1.NetworkPolicy{npPolicy("a", vk, ingress, networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}},
			})},
			isolated: []*npPod{srv, srv2},
			checks:   []check{{srv, cli, 6379, false}, {srv, nil, 6379, true}},
		},
		{
			name: "several policies and rules add up",
			policies: []*networkingv1.NetworkPolicy{
				npPolicy("a", vk, nil, networkingv1.NetworkPolicyIngressRule{
					From:  []networkingv1.NetworkPolicyPeer{fromPods(map[string]string{"role": "client"})},
					Ports: []networkingv1.NetworkPolicyPort{tcpPort(6379)},
				}),
				npPolicy("a", nil, ingress, networkingv1.NetworkPolicyIngressRule{
					From:  []networkingv1.NetworkPolicyPeer{fromPods(vk)},
					Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("bus"))}},
				}),
			},
			isolated: []*npPod{srv, cli, other, srv2},
			checks: []check{
				{srv, cli, 6379, true}, {srv, cli, 16379, false}, {srv, srv2, 16379, true}, {srv, srv2, 6379, false},
				{cli, srv, 16379, false}, {other, bcli, 1, false}, {srv, bcli, 6379, false},
			},
		},
		{
			name: "an egress-only policy isolates no ingress",
			policies: []*networkingv1.NetworkPolicy{
				npPolicy("a", vk, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}),
			},
			checks: []check{{srv, other, 6379, true}},
		},
		{
			name: "a policy of another namespace does not select",
			policies: []*networkingv1.NetworkPolicy{
				npPolicy("b", nil, ingress),
			},
			isolated: []*npPod{bcli, btool},
			checks:   []check{{srv, other, 6379, true}, {bcli, btool, 1, false}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			targets := ingressTargets(pods, nsLabels, tc.policies)
			var got []string
			for _, tg := range targets {
				got = append(got, tg.pod.key())
			}
			var want []string
			for _, p := range tc.isolated {
				want = append(want, p.key())
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("isolated pods: got %v, want %v", got, want)
			}
			for _, c := range tc.checks {
				admitted := true
				for _, tg := range targets {
					if tg.pod == c.to {
						admitted = tg.admits(c.from, c.port)
					}
				}
				from := "the node"
				if c.from != nil {
					from = c.from.key()
				}
				if admitted != c.want {
					t.Errorf("%s -> %s:%d: admitted %v, want %v", from, c.to.key(), c.port, admitted, c.want)
				}
			}
			// Whatever the policies, the rules render and name only loopback addresses.
			if _, err := renderIngress(npTestScope, targets); err != nil {
				t.Fatal(err)
			}
		})
	}
}

var npTestScope = npScope{
	podRange:  netip.MustParsePrefix("127.100.0.0/16"),
	nodeRange: netip.MustParsePrefix("127.100.0.0/24"),
}

func TestNetworkPolicyRendering(t *testing.T) {
	srv := npTestPod("a", "server", "127.100.1.1", map[string]string{"app": "vk"}, corev1.ContainerPort{Name: "valkey", ContainerPort: 6379})
	cli := npTestPod("a", "client", "127.100.1.2", map[string]string{"role": "client"})
	late := npTestPod("a", "late", "127.100.1.3", map[string]string{"role": "client"})
	pol := npPolicy("a", map[string]string{"app": "vk"}, nil, networkingv1.NetworkPolicyIngressRule{
		From: []networkingv1.NetworkPolicyPeer{fromPods(map[string]string{"role": "client"})},
		Ports: []networkingv1.NetworkPolicyPort{
			{Port: ptr.To(intstr.FromString("valkey"))}, tcpPort(6380), tcpPort(6379),
			{Port: ptr.To(intstr.FromInt32(7000)), EndPort: ptr.To(int32(7005))}, tcpPort(7003),
		},
	})
	tables, err := renderIngress(npTestScope, ingressTargets([]*npPod{srv, cli, late}, nil, []*networkingv1.NetworkPolicy{pol}))
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || tables[0].ip != srv.ip {
		t.Fatalf("only the server is isolated, got tables %+v", tables)
	}
	body := tables[0].body
	for _, want := range []string{
		"type filter hook input priority 0; policy accept;",
		"tcp flags & (syn | ack) == syn jump ingress",
		`iif "lo" accept`,
		"ip saddr 127.100.1.1 accept",
		"tcp dport { 6379-6380, 7000-7005 } ip saddr { 127.100.1.2, 127.100.1.3 } accept",
		"ip saddr 127.100.0.0/16 ip saddr != 127.100.0.0/24 meta l4proto tcp reject with tcp reset",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("rules lack %q:\n%s", want, body)
		}
	}
	// The rules come before the reset, which comes last.
	if i, j := strings.Index(body, "127.100.1.3 } accept"), strings.Index(body, "reject"); i < 0 || j < i {
		t.Errorf("the reset does not come after the allows:\n%s", body)
	}

	// Only loopback addresses, ever.
	bad := npTestPod("a", "bad", "10.0.0.1", map[string]string{"app": "vk"})
	if _, err := renderIngress(npTestScope, ingressTargets([]*npPod{bad}, nil, []*networkingv1.NetworkPolicy{pol})); err == nil {
		t.Errorf("a non-loopback target address was rendered")
	}
	badScope := npTestScope
	badScope.podRange = netip.MustParsePrefix("10.0.0.0/8")
	if _, err := renderIngress(badScope, nil); err == nil {
		t.Errorf("a non-loopback range was rendered")
	}
}
