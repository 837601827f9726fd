package localcluster

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/valkey-fsm/valkey-operator/internal/testcert"
)

// frontProxyClient is the common name of the certificate with which the API server proxies
// requests to aggregated APIs (the operator's journal): the aggregated server trusts the
// X-Remote-User and X-Remote-Group headers only on a connection with that certificate.
const frontProxyClient = "front-proxy-client"

// frontProxyFiles writes a CA and a client certificate signed by it into dir, as kubeadm
// does for the aggregation layer, and returns the API server flags that use them.
func frontProxyFiles(dir string) (map[string]string, error) {
	const tenYears = 10 * 365 * 24 * time.Hour
	ca, err := testcert.NewCAFor("front-proxy-ca", tenYears)
	if err != nil {
		return nil, err
	}
	pair, err := ca.Sign(testcert.Spec{Serial: 2, CommonName: frontProxyClient, NotBefore: time.Now().Add(-time.Hour), ValidFor: tenYears,
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"front-proxy-ca.crt":     ca.PEM,
		"front-proxy-client.crt": pair.CertPEM,
		"front-proxy-client.key": pair.KeyPEM,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return map[string]string{
		"requestheader-client-ca-file":       filepath.Join(dir, "front-proxy-ca.crt"),
		"requestheader-allowed-names":        frontProxyClient,
		"requestheader-username-headers":     "X-Remote-User",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"proxy-client-cert-file":             filepath.Join(dir, "front-proxy-client.crt"),
		"proxy-client-key-file":              filepath.Join(dir, "front-proxy-client.key"),
	}, nil
}

// FrontProxyClientCert is the certificate the API server proxies to aggregated APIs with:
// a test that must talk to an aggregated server as the API server would (the operator's
// journal of an in-process operator, say) presents it.
func (c *Cluster) FrontProxyClientCert() (tls.Certificate, error) {
	dir := filepath.Dir(c.cp.auditLog)
	return tls.LoadX509KeyPair(filepath.Join(dir, "front-proxy-client.crt"), filepath.Join(dir, "front-proxy-client.key"))
}

// GetAsFrontProxy sends GET path to an aggregated API server at addr (host:port) as the API
// server's front proxy would: its client certificate, the user and groups in X-Remote-User and
// X-Remote-Group. With user "", no certificate and no headers (a caller that is not the API
// server). The server's own certificate is not verified: these tests are about who may read.
func (c *Cluster) GetAsFrontProxy(addr, path, user string, groups ...string) (int, []byte, error) {
	tlsConfig := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // see above
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
	if err != nil {
		return 0, nil, err
	}
	if user != "" {
		cert, err := c.FrontProxyClientCert()
		if err != nil {
			return 0, nil, err
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
		req.Header.Set("X-Remote-User", user)
		for _, g := range groups {
			req.Header.Add("X-Remote-Group", g)
		}
	}
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}
