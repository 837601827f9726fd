package serviceproxy

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// listener serves one ClusterIP:port.
type listener struct {
	addr      netip.AddrPort
	ln        *net.TCPListener
	route     atomic.Pointer[route]
	next      atomic.Uint64 // round-robin counter
	closeOnce sync.Once
	done      chan struct{}
}

// close stops accepting. Connections already accepted keep running, as established
// connections survive Service changes under kube-proxy; Run's end closes them.
func (l *listener) close() {
	l.closeOnce.Do(func() {
		close(l.done)
		_ = l.ln.Close()
	})
}

// serve accepts connections until the listener is closed and hands each to a handler.
func (p *Proxy) serve(l *listener) {
	defer p.handlers.Done()
	for {
		c, err := l.ln.AcceptTCP()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off instead of spinning.
			p.log.Warn("accept failed", "addr", l.addr, "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if !p.track(c) {
			_ = c.Close()
			return
		}
		p.handlers.Add(1)
		go p.handle(l, c)
	}
}

// handle forwards one client connection to a backend picked for it.
func (p *Proxy) handle(l *listener, client *net.TCPConn) {
	defer p.handlers.Done()
	defer p.untrack(client)
	r := l.route.Load()
	backend, ok := p.pick(r, &l.next)
	if !ok {
		// Reset at once, like kube-proxy's REJECT rule for Services without endpoints: a
		// client must fail fast, not hang.
		p.log.Debug("no ready backend; resetting", "service", r.service, "addr", l.addr)
		reset(client)
		return
	}
	upstream, err := p.dialBackend(client, backend)
	if err != nil {
		p.log.Debug("backend dial failed; resetting", "service", r.service, "backend", backend, "err", err)
		reset(client)
		return
	}
	if !p.track(upstream) {
		_ = upstream.Close()
		_ = client.Close()
		return
	}
	defer p.untrack(upstream)
	pipe(client, upstream)
}

// dialBackend connects to backend from the client's address when that is on loopback (and
// Options.KeepSource allows it), so that the backend sees the real client and netfault
// rules between client and backend apply to proxied traffic too.
func (p *Proxy) dialBackend(client *net.TCPConn, backend netip.AddrPort) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: p.dial, Control: bindAddressNoPort}
	if ra, ok := client.RemoteAddr().(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ra.IP); ok && ip.Unmap().IsLoopback() && ip.Unmap().Is4() == backend.Addr().Is4() && (p.keep == nil || p.keep(ip.Unmap())) {
			d.LocalAddr = &net.TCPAddr{IP: ip.Unmap().AsSlice()}
		}
	}
	c, err := d.Dial("tcp", backend.String())
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// reset closes c with an RST instead of a FIN.
func reset(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}

// track registers a connection so that shutdown can close it; false after shutdown began.
func (p *Proxy) track(c *net.TCPConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c *net.TCPConn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}
