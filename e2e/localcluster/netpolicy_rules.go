package localcluster

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster/netfault"
)

// The pure half of the NetworkPolicy enforcer (netpolicy.go): from Pods, Namespaces and
// NetworkPolicies to the ingress each isolated Pod admits (ingressTargets), and from that to
// the nftables chains that enforce it (renderIngress). Nothing here needs root.

// npPod is what the computation knows of a Pod that runs on the local cluster.
type npPod struct {
	pod *corev1.Pod // namespace, labels, container ports
	ip  netip.Addr
}

func (p *npPod) key() string { return p.pod.Namespace + "/" + p.pod.Name }

// npPortRange is an inclusive range of TCP ports.
type npPortRange struct{ from, to uint16 }

// npAllow is one ingress rule of one policy as it applies to one isolated Pod: TCP
// connections to these ports (nil: every port) from these sources (any: every source).
type npAllow struct {
	ports []npPortRange
	any   bool
	from  []*npPod
}

// npTarget is an ingress-isolated Pod and everything its policies admit. With no allows it
// admits nothing but itself and the node.
type npTarget struct {
	pod    *npPod
	allows []npAllow
}

// admits tells whether a TCP connection from src (nil: the node, a host process) to port of
// the target is allowed: the semantics the rendered rules implement, for tests.
func (t npTarget) admits(src *npPod, port uint16) bool {
	if src == nil || src == t.pod || src.ip == t.pod.ip {
		return true
	}
	for _, a := range t.allows {
		if !portsContain(a.ports, port) {
			continue
		}
		if a.any || slices.Contains(a.from, src) {
			return true
		}
	}
	return false
}

func portsContain(ports []npPortRange, port uint16) bool {
	if ports == nil {
		return true
	}
	for _, r := range ports {
		if r.from <= port && port <= r.to {
			return true
		}
	}
	return false
}

// isolatesIngress follows the API's defaulting of policyTypes: empty means Ingress (plus
// Egress when there are egress rules), so only a policy that lists types without Ingress
// leaves ingress alone.
func isolatesIngress(p *networkingv1.NetworkPolicy) bool {
	return len(p.Spec.PolicyTypes) == 0 || slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
}

// ingressTargets computes, for every Pod selected by at least one policy of its namespace
// that isolates ingress, what its policies admit. nsLabels are the namespaces' labels (a
// namespace missing there has only kubernetes.io/metadata.name). The result is sorted by
// Pod IP.
func ingressTargets(pods []*npPod, nsLabels map[string]map[string]string, policies []*networkingv1.NetworkPolicy) []npTarget {
	nsSet := func(ns string) labels.Set {
		if l, ok := nsLabels[ns]; ok {
			return l
		}
		return labels.Set{corev1.LabelMetadataName: ns}
	}
	byTarget := map[*npPod]*npTarget{}
	var order []*npPod
	for _, pol := range policies {
		if !isolatesIngress(pol) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.PodSelector)
		if err != nil {
			continue // the API validates selectors; an invalid one selects nothing
		}
		for _, p := range pods {
			if p.pod.Namespace != pol.Namespace || !sel.Matches(labels.Set(p.pod.Labels)) {
				continue
			}
			t, ok := byTarget[p]
			if !ok {
				t = &npTarget{pod: p}
				byTarget[p] = t
				order = append(order, p)
			}
			for _, rule := range pol.Spec.Ingress {
				ports, ok := resolvePorts(rule.Ports, p.pod)
				if !ok {
					continue // only ports that this Pod does not have, or not TCP
				}
				a := npAllow{ports: ports, any: len(rule.From) == 0}
				if !a.any {
					a.from = peerPods(rule.From, pol.Namespace, pods, nsSet)
					if len(a.from) == 0 {
						continue
					}
				}
				t.allows = append(t.allows, a)
			}
		}
	}
	out := make([]npTarget, 0, len(order))
	for _, p := range order {
		out = append(out, *byTarget[p])
	}
	slices.SortFunc(out, func(a, b npTarget) int { return a.pod.ip.Compare(b.pod.ip) })
	return out
}

// resolvePorts turns a rule's ports into TCP port ranges of the target Pod: nil when the
// rule admits every TCP port, ok false when it admits no TCP port of this Pod (UDP and SCTP
// entries, named ports the Pod does not declare). Named ports are resolved against the
// target's container ports, as the API says.
func resolvePorts(ports []networkingv1.NetworkPolicyPort, target *corev1.Pod) ([]npPortRange, bool) {
	if len(ports) == 0 {
		return nil, true
	}
	var out []npPortRange
	for _, np := range ports {
		proto := corev1.ProtocolTCP
		if np.Protocol != nil {
			proto = *np.Protocol
		}
		if proto != corev1.ProtocolTCP {
			continue // UDP and SCTP are not enforced (see docs/development/local-cluster.md)
		}
		switch {
		case np.Port == nil:
			return nil, true // every TCP port
		case np.Port.Type == intstr.String:
			for _, c := range target.Spec.Containers {
				for _, cp := range c.Ports {
					cproto := cp.Protocol
					if cproto == "" {
						cproto = corev1.ProtocolTCP
					}
					if cp.Name == np.Port.StrVal && cproto == corev1.ProtocolTCP && validPort(int64(cp.ContainerPort)) {
						out = append(out, npPortRange{uint16(cp.ContainerPort), uint16(cp.ContainerPort)})
					}
				}
			}
		default:
			from := int64(np.Port.IntVal)
			to := from
			if np.EndPort != nil {
				to = int64(*np.EndPort)
			}
			if validPort(from) && validPort(to) && from <= to {
				out = append(out, npPortRange{uint16(from), uint16(to)})
			}
		}
	}
	if len(out) == 0 {
		return nil, false
	}
	return mergeRanges(out), true
}

func validPort(p int64) bool { return p >= 1 && p <= 65535 }

// mergeRanges sorts ranges and joins those that overlap or touch: nft refuses overlapping
// intervals in one set.
func mergeRanges(rs []npPortRange) []npPortRange {
	slices.SortFunc(rs, func(a, b npPortRange) int { return int(a.from) - int(b.from) })
	out := []npPortRange{rs[0]}
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if int(r.from) <= int(last.to)+1 {
			last.to = max(last.to, r.to)
			continue
		}
		out = append(out, r)
	}
	return out
}

// peerPods is the union of the Pods that a rule's peers select, in the order of pods.
func peerPods(peers []networkingv1.NetworkPolicyPeer, policyNS string, pods []*npPod, nsSet func(string) labels.Set) []*npPod {
	var out []*npPod
	for _, p := range pods {
		for _, peer := range peers {
			if peerMatches(peer, policyNS, p, nsSet) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func peerMatches(peer networkingv1.NetworkPolicyPeer, policyNS string, p *npPod, nsSet func(string) labels.Set) bool {
	if peer.IPBlock != nil {
		return inIPBlock(peer.IPBlock, p.ip)
	}
	if peer.PodSelector == nil && peer.NamespaceSelector == nil {
		return false // the API refuses an empty peer
	}
	if peer.NamespaceSelector == nil {
		if p.pod.Namespace != policyNS {
			return false
		}
	} else if !selects(peer.NamespaceSelector, nsSet(p.pod.Namespace)) {
		return false
	}
	return peer.PodSelector == nil || selects(peer.PodSelector, labels.Set(p.pod.Labels))
}

func selects(sel *metav1.LabelSelector, set labels.Set) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(set)
}

// inIPBlock tells whether a Pod's address is in the block's CIDR and none of its excepts.
// A Pod's address is its Pod IP whatever source address its packets carry: that is the
// address a Pod has in a real cluster.
func inIPBlock(b *networkingv1.IPBlock, ip netip.Addr) bool {
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil || !cidr.Contains(ip.Unmap()) {
		return false
	}
	for _, e := range b.Except {
		if ex, err := netip.ParsePrefix(e); err == nil && ex.Contains(ip.Unmap()) {
			return false
		}
	}
	return true
}

// npScope is what the rendered rules need to know of the cluster.
type npScope struct {
	podRange  netip.Prefix // the slot's loopback range (Pod and node addresses)
	nodeRange netip.Prefix // the part of podRange that nodes and the host use, which is not a Pod's source
}

// npTableName is the enforcer's table in each isolated Pod's network namespace; it goes with
// the namespace.
const npTableName = "vkfsm_np"

// npTable is the rule set of one isolated Pod: the body of the table npTableName in its
// network namespace.
type npTable struct {
	ip   netip.Addr
	key  string // namespace/name, for the log
	body string
}

// renderIngress writes, for every isolated Pod, the body of the table that enforces its
// ingress in its own network namespace (netpolicy.go loads it there): a filter on the input
// hook that sends the first packet of every TCP connection (SYN without ACK, so that the
// replies of the connections the Pod opens itself pass) to the chain "ingress". That chain
// accepts the Pod's own traffic (on lo, or to its own address), then what its policies admit
// (by source address: each Pod sends from its own address, from its own namespace), then
// rejects with a TCP reset whatever else comes from a Pod of this cluster (a source in the
// Pods' range but not the nodes'), and lets the rest through: that is the node (the test
// process, the API server, the service proxy, the kubelet's probes).
//
// Every address in it is checked to be a loopback address. The tables come sorted by address.
func renderIngress(scope npScope, targets []npTarget) ([]npTable, error) {
	if err := checkScope(scope); err != nil {
		return nil, err
	}
	seen := map[netip.Addr]bool{}
	out := make([]npTable, 0, len(targets))
	for _, t := range targets {
		ip := t.pod.ip.Unmap()
		if err := loopback4(ip); err != nil {
			return nil, fmt.Errorf("pod %s: %w", t.pod.key(), err)
		}
		if seen[ip] {
			return nil, fmt.Errorf("pod %s: address %s appears twice", t.pod.key(), ip)
		}
		seen[ip] = true
		var b strings.Builder
		b.WriteString("\tchain input {\n\t\ttype filter hook input priority 0; policy accept;\n")
		b.WriteString("\t\ttcp flags & (syn | ack) == syn jump ingress\n\t}\n")
		b.WriteString("\tchain ingress {\n")
		b.WriteString("\t\tiif \"lo\" accept\n")
		fmt.Fprintf(&b, "\t\tip saddr %s accept\n", ip)
		done := map[string]bool{} // identical rules from several policies
		emit := func(rule string) {
			if !done[rule] {
				done[rule] = true
				fmt.Fprintf(&b, "\t\t%s\n", rule)
			}
		}
		for _, a := range t.allows {
			dport := ""
			if a.ports != nil {
				dport = "tcp dport " + renderPorts(a.ports) + " "
			}
			if a.any {
				emit(dport + "accept")
				continue
			}
			var ips []string
			for _, src := range a.from {
				sip := src.ip.Unmap()
				if err := loopback4(sip); err != nil {
					return nil, fmt.Errorf("pod %s: %w", src.key(), err)
				}
				if !slices.Contains(ips, sip.String()) {
					ips = append(ips, sip.String())
				}
			}
			slices.SortFunc(ips, func(a, b string) int {
				return netip.MustParseAddr(a).Compare(netip.MustParseAddr(b))
			})
			emit(fmt.Sprintf("%sip saddr { %s } accept", dport, strings.Join(ips, ", ")))
		}
		fmt.Fprintf(&b, "\t\tip saddr %s ip saddr != %s meta l4proto tcp reject with tcp reset\n", scope.podRange, scope.nodeRange)
		b.WriteString("\t}\n")
		out = append(out, npTable{ip: ip, key: t.pod.key(), body: b.String()})
	}
	slices.SortFunc(out, func(a, b npTable) int { return a.ip.Compare(b.ip) })
	return out, nil
}

// npDocument joins the tables into one text: what WaitNetworkPolicies compares and
// NetworkPolicyRules prints.
func npDocument(tables []npTable) string {
	var b strings.Builder
	for _, t := range tables {
		fmt.Fprintf(&b, "# %s (%s): table inet %s\n%s", t.ip, t.key, npTableName, t.body)
	}
	return b.String()
}

func renderPorts(ports []npPortRange) string {
	parts := make([]string, 0, len(ports))
	for _, r := range ports {
		if r.from == r.to {
			parts = append(parts, fmt.Sprint(r.from))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", r.from, r.to))
		}
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// loopback4 refuses anything but an IPv4 loopback address: the rules never touch traffic
// that leaves the machine.
func loopback4(ip netip.Addr) error {
	if !ip.Is4() {
		return fmt.Errorf("%s is not an IPv4 address", ip)
	}
	return netfault.CheckLoopback(ip)
}

func checkScope(s npScope) error {
	for _, p := range []netip.Prefix{s.podRange, s.nodeRange} {
		if !p.IsValid() || p.Bits() < 8 {
			return fmt.Errorf("range %s is not inside 127.0.0.0/8", p)
		}
		if err := loopback4(p.Addr()); err != nil {
			return err
		}
	}
	return nil
}
