package valkey

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"

	vk "github.com/valkey-io/valkey-go"
)

// How the pool reaches nodes that serve TLS. A node is reached in plain on Port unless it is
// routed (Route): then over TLS on TLSPort, verified against the cluster's CA (SetTLS) under
// its DNS name. Replication between two nodes that both serve TLS uses it too (the replica's
// tls-replication, set with every REPLICAOF and before a hand-over): a node of a revision that
// does not serve TLS yet is followed in plain, which is what lets a roll turn TLS on or off
// one node at a time.

// SetTLS is the configuration the pool verifies TLS nodes with (the CA, and the client
// certificate when nodes require one); nil when the cluster serves no TLS. Clients made under
// another configuration are dropped.
func (p *Pool) SetTLS(cfg *tls.Config) {
	p.mu.Lock()
	changed := (cfg == nil) != (p.tlsBase == nil) || (cfg != nil && p.tlsBase != nil && !sameTLS(cfg, p.tlsBase))
	p.tlsBase = cfg
	var drop []vk.Client
	if changed {
		for addr, c := range p.clients {
			if _, routed := p.routes[hostOf(addr)]; routed {
				drop = append(drop, c)
				delete(p.clients, addr)
			}
		}
	}
	p.mu.Unlock()
	for _, c := range drop {
		c.Close()
	}
}

// sameTLS compares what the pool takes from a configuration: the CA pool and the client
// certificate (by their identity: a configuration is rebuilt only when its Secret changes).
func sameTLS(a, b *tls.Config) bool {
	if !a.RootCAs.Equal(b.RootCAs) || len(a.Certificates) != len(b.Certificates) {
		return false
	}
	for i := range a.Certificates {
		if len(a.Certificates[i].Certificate) == 0 || len(b.Certificates[i].Certificate) == 0 ||
			string(a.Certificates[i].Certificate[0]) != string(b.Certificates[i].Certificate[0]) {
			return false
		}
	}
	return true
}

// Route says how to reach the node at podIP: over TLS, verified as serverName, or in plain
// ("").  A change drops the node's client.
func (p *Pool) Route(podIP, serverName string) {
	p.mu.Lock()
	old, had := p.routes[podIP]
	if serverName == "" {
		delete(p.routes, podIP)
	} else {
		p.routes[podIP] = serverName
	}
	var drop vk.Client
	if (had && old != serverName) || (!had && serverName != "") {
		drop = p.clients[Addr(podIP)]
		delete(p.clients, Addr(podIP))
	}
	p.mu.Unlock()
	if drop != nil {
		drop.Close()
	}
}

// TLSOf is how to dial the node at podIP directly (backups): its address and the TLS
// configuration to wrap the connection in (nil: plain).
func (p *Pool) TLSOf(podIP string) (string, *tls.Config) {
	p.mu.Lock()
	defer p.mu.Unlock()
	name, ok := p.routes[podIP]
	if !ok || p.tlsBase == nil {
		return Addr(podIP), nil
	}
	cfg := p.tlsBase.Clone()
	cfg.ServerName = name
	return net.JoinHostPort(podIP, strconv.Itoa(TLSPort)), cfg
}

// clientPort is the port the node at podIP is met and migrated to on: its TLS port when it
// serves TLS (in cluster mode the bus, MEET and MIGRATE follow tls-cluster), else Port.
func (p *Pool) clientPort(podIP string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, routed := p.routes[podIP]; routed && p.tlsBase != nil {
		return TLSPort
	}
	return Port
}

// bothTLS reports whether replication from primaryIP to podIP can use TLS.
func (p *Pool) bothTLS(podIP, primaryIP string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, a := p.routes[podIP]
	_, b := p.routes[primaryIP]
	return a && b && p.tlsBase != nil
}

// replicationTo is the port a replica at podIP follows primaryIP on, and the tls-replication
// setting that goes with it (nil when the cluster serves no TLS: nothing to set).
func (p *Pool) replicationTo(c vk.Client, podIP, primaryIP string) (int64, []vk.Completed) {
	p.mu.Lock()
	anyTLS := p.tlsBase != nil
	p.mu.Unlock()
	if !anyTLS {
		return Port, nil
	}
	if p.bothTLS(podIP, primaryIP) {
		return TLSPort, []vk.Completed{c.B().ConfigSet().ParameterValue().ParameterValue("tls-replication", "yes").Build()}
	}
	return Port, []vk.Completed{c.B().ConfigSet().ParameterValue().ParameterValue("tls-replication", "no").Build()}
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

// tlsOption fills the dial options of addr for TLS when the node is routed so.
func (p *Pool) tlsOption(addr string, o *vk.ClientOption) {
	host := hostOf(addr)
	dial, cfg := p.TLSOf(host)
	if cfg != nil {
		o.InitAddress = []string{dial}
		o.TLSConfig = cfg
	}
}

// ServedCertificate is the certificate the node at podIP serves, over a fresh handshake
// verified as the pool verifies the node (a certificate that does not verify is an error).
func (p *Pool) ServedCertificate(ctx context.Context, podIP string) (*x509.Certificate, error) {
	addr, cfg := p.TLSOf(podIP)
	if cfg == nil {
		return nil, fmt.Errorf("%s is not reached over TLS", podIP)
	}
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: p.opts.Timeout, LocalAddr: p.opts.LocalAddr()}, Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s presented no certificate", addr)
	}
	return certs[0], nil
}

// ReloadCertificate makes the node load its certificate, key and CA files again (Valkey
// rebuilds its TLS context whenever a tls- file setting is set, to the same path or not).
// Connections already open keep the certificate they were made with.
func (p *Pool) ReloadCertificate(ctx context.Context, podIP, runID string) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		// The node's own paths, set again as they are.
		files, err := c.Do(ctx, c.B().ConfigGet().Parameter("tls-cert-file").Parameter("tls-key-file").Parameter("tls-ca-cert-file").Build()).AsStrMap()
		if err != nil {
			return err
		}
		if files["tls-cert-file"] == "" {
			return fmt.Errorf("%s serves no TLS (no tls-cert-file)", podIP)
		}
		return c.Do(ctx, c.B().ConfigSet().ParameterValue().
			ParameterValue("tls-cert-file", files["tls-cert-file"]).
			ParameterValue("tls-key-file", files["tls-key-file"]).
			ParameterValue("tls-ca-cert-file", files["tls-ca-cert-file"]).Build()).Error()
	})
}
