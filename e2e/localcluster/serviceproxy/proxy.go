package serviceproxy

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// Options configure a Proxy. The zero value is usable.
type Options struct {
	// Logger receives what the proxy does and refuses (default: discarded).
	Logger *slog.Logger
	// Static maps "namespace/name" of a Service to one "ip:port" backend that every port of the
	// Service forwards to, instead of Pods; meant for selector-less Services such as
	// "default/kubernetes" -> the API server's "127.0.0.1:port". The IP must be a loopback
	// literal: other entries are logged and ignored.
	Static map[string]string
	// DialTimeout bounds the dial to a backend (default 5 s). It only matters when a backend
	// swallows packets, e.g. behind a netfault partition; a closed port fails at once.
	DialTimeout time.Duration
	// KeepSource tells whether a client's address can be the source of the connection to the
	// backend (nil: every loopback address can). An address the backend cannot answer must
	// not be: where each Pod has its own network namespace, 127.0.0.1 is the backend's own
	// localhost and a Pod's address is not the host's, so those clients are proxied from the
	// host's own address instead.
	KeepSource func(client netip.Addr) bool
}

// Proxy serves the ClusterIPs of Services. Create it with New and start it with Run.
type Proxy struct {
	cs     kubernetes.Interface
	log    *slog.Logger
	static map[string]netip.AddrPort
	dial   time.Duration
	keep   func(netip.Addr) bool

	// Set by Run before the first listener starts, read by connection handlers.
	services corelisters.ServiceLister
	pods     corelisters.PodLister

	mu        sync.Mutex
	listeners map[netip.AddrPort]*listener
	serving   map[string]bool // "namespace/name" -> every TCP port has a listener
	changed   chan struct{}   // closed (and replaced) whenever serving changes
	conns     map[*net.TCPConn]struct{}
	closed    bool
	handlers  sync.WaitGroup // connection handlers and accept loops

	warnMu sync.Mutex // separate from mu: sync warns while holding mu
	warned map[string]string
}

// New returns a Proxy that watches Services and Pods through cs once Run is called.
func New(cs kubernetes.Interface, opts Options) *Proxy {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	p := &Proxy{
		cs:        cs,
		log:       log,
		static:    map[string]netip.AddrPort{},
		dial:      opts.DialTimeout,
		keep:      opts.KeepSource,
		listeners: map[netip.AddrPort]*listener{},
		serving:   map[string]bool{},
		changed:   make(chan struct{}),
		warned:    map[string]string{},
		conns:     map[*net.TCPConn]struct{}{},
	}
	for key, hostPort := range opts.Static {
		ap, err := netip.ParseAddrPort(hostPort)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			log.Error("ignoring static backend: want a loopback ip:port", "service", key, "backend", hostPort, "err", err)
			continue
		}
		p.static[key] = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return p
}

// Serving tells whether every TCP port of the Service has a listener on its ClusterIP, as of
// the last Service change the proxy has seen.
func (p *Proxy) Serving(namespace, name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.serving[namespace+"/"+name]
}

// WaitServing blocks until Serving(namespace, name) is true or ctx ends.
func (p *Proxy) WaitServing(ctx context.Context, namespace, name string) error {
	key := namespace + "/" + name
	for {
		p.mu.Lock()
		ok, changed := p.serving[key], p.changed
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// warnOnce logs a refusal the first time it happens for key, and again only when the
// message changes: syncs run on every Service event and would repeat it endlessly.
func (p *Proxy) warnOnce(key, msg string, args ...any) {
	p.warnMu.Lock()
	seen := p.warned[key] == msg
	p.warned[key] = msg
	p.warnMu.Unlock()
	if !seen {
		p.log.Warn(msg, args...)
	}
}
