package localcluster

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/valkey-fsm/valkey-operator/internal/testcert"
)

// kubeletClientName is the common name of the client certificate with which the API server
// reaches the node agent's kubelet API (logs, exec, attach, port-forward, node proxy).
const kubeletClientName = "kube-apiserver-kubelet-client"

// kubeletPKI are the certificates of the kubelet API, as kubeadm sets them up but with two
// dedicated CAs: one signs every Node's serving certificate (the API server verifies it with
// --kubelet-certificate-authority), the other signs the API server's kubelet client
// certificate and nothing else, so a client the agent accepts is the API server.
type kubeletPKI struct {
	servingCA *testcert.CA
	clientCAs *x509.CertPool
	serial    int64
}

// newKubeletPKI writes the CAs and the API server's client certificate into dir and returns
// the API server flags that use them. Node addresses, never names, are used to reach a node
// (--kubelet-preferred-address-types=InternalIP): nothing here resolves node names.
func newKubeletPKI(dir string) (*kubeletPKI, map[string]string, error) {
	const tenYears = 10 * 365 * 24 * time.Hour
	serving, err := testcert.NewCAFor("localcluster-kubelet-ca", tenYears)
	if err != nil {
		return nil, nil, err
	}
	clientCA, err := testcert.NewCAFor("localcluster-kubelet-client-ca", tenYears)
	if err != nil {
		return nil, nil, err
	}
	client, err := clientCA.Sign(testcert.Spec{Serial: 2, CommonName: kubeletClientName, NotBefore: time.Now().Add(-time.Hour), ValidFor: tenYears,
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return nil, nil, err
	}
	files := map[string][]byte{
		"kubelet-ca.crt":        serving.PEM,
		"kubelet-client-ca.crt": clientCA.PEM,
		"kubelet-client.crt":    client.CertPEM,
		"kubelet-client.key":    client.KeyPEM,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.Cert)
	return &kubeletPKI{servingCA: serving, clientCAs: pool, serial: 10}, map[string]string{
		"kubelet-certificate-authority":   filepath.Join(dir, "kubelet-ca.crt"),
		"kubelet-client-certificate":      filepath.Join(dir, "kubelet-client.crt"),
		"kubelet-client-key":              filepath.Join(dir, "kubelet-client.key"),
		"kubelet-preferred-address-types": "InternalIP",
	}, nil
}

// serverConfig is the TLS configuration of one node's kubelet API: a serving certificate for
// the node's address (and name), and the API server's client certificate required.
func (p *kubeletPKI) serverConfig(n *node) (*tls.Config, error) {
	p.serial++
	pair, err := p.servingCA.Sign(testcert.Spec{
		Serial: p.serial, CommonName: n.name, DNSNames: []string{n.name}, IPs: []net.IP{n.ip.AsSlice()},
		NotBefore: time.Now().Add(-time.Hour), ValidFor: 10 * 365 * 24 * time.Hour,
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.clientCAs,
		MinVersion:   tls.VersionTLS12,
		// Streams (exec, port-forward) are HTTP/1.1 upgrades.
		NextProtos: []string{"http/1.1"},
	}, nil
}

// KubeletCA is the CA (PEM) that signs every Node's kubelet API serving certificate: what the
// API server verifies the node agent with, for a test that dials a node itself.
func (c *Cluster) KubeletCA() []byte { return c.cp.kubelet.servingCA.PEM }
