package serviceproxy

import (
	"net/netip"
	"sort"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// route is what one Service port forwards to. A listener holds its current route behind an
// atomic pointer, so a Service update changes it without closing the listener.
type route struct {
	service         string // "namespace/name", for logs
	namespace       string
	port            int32
	targetPort      intstr.IntOrString
	selector        labels.Selector // nil: no Pod backends
	static          netip.AddrPort  // valid: the one backend, Pods are ignored
	publishNotReady bool
	// backends memoises the backends as of the route's Pod generation (gen, advanced by every
	// event of a Pod its selector matches): listing Pods by selector for every connection
	// cost a mass-failover benchmark a fifth of its test process's CPU (100 clients
	// redialling every 50 ms, 300 Pods in one namespace).
	backends atomic.Pointer[backendsAt]
	gen      atomic.Uint64
}

// backendsAt is a route's backends computed when its Pod generation was gen.
type backendsAt struct {
	gen      uint64
	backends []netip.AddrPort
}

// pick returns the next backend of r in round-robin order, or false when there is none.
// next is the listener's counter; backends are sorted by Pod name so that the order is
// stable between connections.
func (p *Proxy) pick(r *route, next *atomic.Uint64) (netip.AddrPort, bool) {
	if r.static.IsValid() {
		return r.static, true
	}
	if r.selector == nil {
		return netip.AddrPort{}, false
	}
	// The generation is read before the cache: a Pod event after it makes the memo stale for
	// the next connection, never hides a change from it.
	gen := r.gen.Load()
	memo := r.backends.Load()
	if memo == nil || memo.gen != gen {
		memo = &backendsAt{gen: gen, backends: p.backendsOf(r)}
		r.backends.Store(memo)
	}
	if len(memo.backends) == 0 {
		return netip.AddrPort{}, false
	}
	return memo.backends[(next.Add(1)-1)%uint64(len(memo.backends))], true
}

// podChanged advances the Pod generation of every route whose selector matches pod (before
// or after the change): their next connection lists the backends again.
func (p *Proxy) podChanged(pods ...*corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.listeners {
		r := l.route.Load()
		if r.selector == nil {
			continue
		}
		for _, pod := range pods {
			if pod != nil && pod.Namespace == r.namespace && r.selector.Matches(labels.Set(pod.Labels)) {
				r.gen.Add(1)
				break
			}
		}
	}
}

// backendsOf lists r's backends from the Pod cache, sorted by Pod name.
func (p *Proxy) backendsOf(r *route) []netip.AddrPort {
	pods, err := p.pods.Pods(r.namespace).List(r.selector)
	if err != nil {
		return nil
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var backends []netip.AddrPort
	for _, pod := range pods {
		if !eligible(pod, r.publishNotReady) {
			continue
		}
		ip, err := netip.ParseAddr(pod.Status.PodIP)
		if err != nil || !ip.Unmap().IsLoopback() {
			// Never dial outside loopback, whatever a Pod's status claims.
			p.warnOnce("pod/"+pod.Namespace+"/"+pod.Name, "ignoring pod without a loopback podIP", "pod", pod.Namespace+"/"+pod.Name, "podIP", pod.Status.PodIP)
			continue
		}
		port, ok := targetPort(r.targetPort, r.port, pod)
		if !ok {
			continue
		}
		backends = append(backends, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
	}
	return backends
}

// eligible applies the EndpointSlice controller's rules: a Pod serves when it has an IP, is
// not terminating or finished, and is Ready, unless the Service publishes not-ready
// addresses.
func eligible(pod *corev1.Pod, publishNotReady bool) bool {
	if pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
		return false
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if publishNotReady {
		return true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// targetPort resolves a Service's targetPort for one Pod: a number is used as is, a name is
// looked up among the Pod's TCP container ports (sidecars included, as Kubernetes does), and
// an unset one means the Service port. A Pod without the named port is not a backend.
func targetPort(tp intstr.IntOrString, port int32, pod *corev1.Pod) (int32, bool) {
	switch {
	case tp.Type == intstr.Int && tp.IntVal != 0:
		return tp.IntVal, true
	case tp.Type == intstr.String && tp.StrVal != "":
		containers := pod.Spec.Containers
		for _, c := range pod.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				containers = append(containers[:len(containers):len(containers)], c)
			}
		}
		for _, c := range containers {
			for _, cp := range c.Ports {
				if cp.Name == tp.StrVal && (cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP) {
					return cp.ContainerPort, true
				}
			}
		}
		return 0, false
	default:
		return port, true
	}
}
