package localcluster

import (
	"fmt"
	"net/netip"
	"sync"
)

// ipam hands out loopback Pod IPs from the slot's range. Keys are "namespace/name" (a
// re-created Pod keeps its IP) or the Pod's UID (a re-created Pod gets a new one).
type ipam struct {
	mu    sync.Mutex
	pfx   netip.Prefix
	next  netip.Addr
	byKey map[string]netip.Addr
	inUse map[netip.Addr]bool
}

func newIPAM(pfx netip.Prefix) *ipam {
	// .0.x is for nodes; Pods start at .1.1.
	first := pfx.Addr().As4()
	first[2], first[3] = 1, 1
	return &ipam{pfx: pfx, next: netip.AddrFrom4(first), byKey: map[string]netip.Addr{}, inUse: map[netip.Addr]bool{}}
}

func (a *ipam) assign(key string) (netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip, ok := a.byKey[key]; ok {
		return ip, nil
	}
	for tries := 0; tries < 1<<16; tries++ {
		ip := a.next
		a.next = a.next.Next()
		if !a.pfx.Contains(a.next) {
			first := a.pfx.Addr().As4()
			first[2], first[3] = 1, 1
			a.next = netip.AddrFrom4(first)
		}
		b := ip.As4()
		if b[3] == 0 || b[3] == 255 || a.inUse[ip] {
			continue
		}
		a.inUse[ip] = true
		a.byKey[key] = ip
		return ip, nil
	}
	return netip.Addr{}, fmt.Errorf("no free pod IP left in %s", a.pfx)
}

func (a *ipam) release(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip, ok := a.byKey[key]; ok {
		delete(a.inUse, ip)
		delete(a.byKey, key)
	}
}
