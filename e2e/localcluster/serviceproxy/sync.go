package serviceproxy

import (
	"fmt"
	"maps"
	"net"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// sync makes the listeners match the Services in the cache: it opens listeners for new
// ClusterIP ports, closes those of deleted ports, and swaps the route of every listener so
// that selector and targetPort changes apply to the next connection. It reports whether some
// listener could not be opened and a retry is due.
func (p *Proxy) sync() (failed bool) {
	svcs, err := p.services.List(labels.Everything())
	if err != nil { // a cache lister does not fail; keep the current state if it does
		p.log.Error("listing services from cache", "err", err)
		return true
	}
	desired := map[netip.AddrPort]*route{}
	ports := map[string][]netip.AddrPort{} // per Service, the addresses it needs
	for _, svc := range svcs {
		key := svc.Namespace + "/" + svc.Name
		ip, ok, err := clusterIP(svc)
		if err != nil {
			p.warnOnce(key, "not serving service", "service", key, "err", err)
			continue
		}
		if !ok {
			continue
		}
		ports[key] = []netip.AddrPort{}
		for _, sp := range svc.Spec.Ports {
			if sp.Protocol != "" && sp.Protocol != corev1.ProtocolTCP {
				p.warnOnce(fmt.Sprintf("%s/%s", key, sp.Name), "not serving non-TCP port", "service", key, "port", sp.Port, "protocol", sp.Protocol)
				continue
			}
			addr := netip.AddrPortFrom(ip, uint16(sp.Port))
			desired[addr] = p.routeFor(svc, sp)
			ports[key] = append(ports[key], addr)
		}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for addr, l := range p.listeners {
		if desired[addr] == nil {
			l.close()
			delete(p.listeners, addr)
			p.log.Info("stopped serving", "service", l.route.Load().service, "addr", addr)
		}
	}
	for addr, r := range desired {
		if l := p.listeners[addr]; l != nil {
			l.route.Store(r)
			continue
		}
		ln, err := net.Listen("tcp", addr.String())
		if err != nil {
			p.warnOnce(r.service+"@"+addr.String(), "cannot listen; retrying", "service", r.service, "addr", addr, "err", err)
			failed = true
			continue
		}
		l := &listener{addr: addr, ln: ln.(*net.TCPListener), done: make(chan struct{})}
		l.route.Store(r)
		p.listeners[addr] = l
		p.handlers.Add(1)
		go p.serve(l)
		p.log.Info("serving", "service", r.service, "addr", addr)
	}

	serving := map[string]bool{}
	for key, addrs := range ports {
		ok := true
		for _, a := range addrs {
			ok = ok && p.listeners[a] != nil
		}
		serving[key] = ok
	}
	if !maps.Equal(serving, p.serving) {
		p.serving = serving
		close(p.changed)
		p.changed = make(chan struct{})
	}
	return failed
}

// clusterIP returns the address a Service is served on. ok is false for Services without
// one (headless, ExternalName); an error means a ClusterIP the proxy refuses to bind: only
// loopback addresses may be served, or the proxy would take addresses of the real network.
func clusterIP(svc *corev1.Service) (ip netip.Addr, ok bool, err error) {
	s := svc.Spec.ClusterIP
	if s == "" || s == corev1.ClusterIPNone {
		return netip.Addr{}, false, nil
	}
	ip, err = netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("unparsable clusterIP %q: %w", s, err)
	}
	ip = ip.Unmap()
	if !ip.Is4() || !ip.IsLoopback() {
		return netip.Addr{}, false, fmt.Errorf("clusterIP %s is not in 127.0.0.0/8; configure the API server's --service-cluster-ip-range on loopback", ip)
	}
	return ip, true, nil
}

// routeFor captures what a connection to one Service port needs to find its backend.
func (p *Proxy) routeFor(svc *corev1.Service, sp corev1.ServicePort) *route {
	key := svc.Namespace + "/" + svc.Name
	r := &route{
		service:         key,
		namespace:       svc.Namespace,
		port:            sp.Port,
		targetPort:      sp.TargetPort,
		publishNotReady: svc.Spec.PublishNotReadyAddresses,
	}
	if static, ok := p.static[key]; ok {
		r.static = static
	} else if len(svc.Spec.Selector) > 0 {
		// An empty selector selects nothing for Services (unlike for most other objects).
		r.selector = labels.SelectorFromSet(svc.Spec.Selector)
	}
	return r
}
