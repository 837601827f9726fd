package machine

import "fmt"

// Certificate reload: a renewed serving certificate is taken up without a restart. The
// operator reads the certificate of the cluster's TLS Secret (Spec.Certificate, its serial, once
// it passed the operator's checks) and asks each node that serves TLS, over a fresh handshake,
// which certificate it serves (Valkey.CertificateSerial). A node serving another one is told to
// load its files again (reload-certificate: Valkey re-reads them when a tls-* setting is set);
// until the mounted Secret has caught up on the node it serves the old one, and the action is
// decided again. certificate-reloaded, a Steady self-loop, records the serial once every node
// that serves TLS serves it: history says when a renewal reached the whole cluster.

// ReloadCertificate makes Node load its certificate files again, to serve Serial.
type ReloadCertificate struct {
	Target
	Serial string
}

func (ReloadCertificate) Kind() string { return "reload-certificate" }

func (a ReloadCertificate) String() string {
	return fmt.Sprintf("reload-certificate %s (serial %s)", a.Node, a.Serial)
}

// servingTLS lists the nodes that run and serve TLS (asked over a handshake), and whether one
// of them does not answer (its certificate unknown).
func (d *decider) servingTLS() (nodes []*Node, unanswered string) {
	for _, n := range d.v.nodes {
		if !n.Pod.Exists || !n.Pod.Running {
			continue
		}
		if !usable(n) {
			unanswered = n.Name
			continue
		}
		if n.Valkey.CertificateSerial != "" {
			nodes = append(nodes, n)
		}
	}
	return nodes, unanswered
}

func guardCertificateReloaded(d *decider) (outcome, bool) {
	want := d.v.spec.Certificate
	if want == "" || want == d.p.Certificate {
		return outcome{}, false
	}
	nodes, unanswered := d.servingTLS()
	if len(nodes) == 0 || unanswered != "" {
		return outcome{}, false
	}
	for _, n := range nodes {
		if n.Valkey.CertificateSerial != want {
			return outcome{}, false
		}
	}
	next := d.p
	next.Certificate = want
	msg := fmt.Sprintf("every node that serves TLS serves certificate %s", want)
	if d.p.Certificate != "" {
		msg += fmt.Sprintf(" (was %s), loaded without a restart", d.p.Certificate)
	}
	return outcome{next: next, message: msg}, true
}

// certificateActions reload the nodes that serve another certificate than the Secret's.
func (d *decider) certificateActions(b *actionList) {
	want := d.v.spec.Certificate
	if want == "" {
		return
	}
	nodes, _ := d.servingTLS()
	for _, n := range nodes {
		if n.Valkey.CertificateSerial != want {
			b.add(ReloadCertificate{Target: TargetOf(n.Shard, n), Serial: want})
		}
	}
}
