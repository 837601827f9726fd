package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// frontProxyClient is the common name of the certificate with which the API server proxies
// requests to aggregated APIs (the operator's journal): the aggregated server trusts the
// X-Remote-User and X-Remote-Group headers only on a connection with that certificate.
const frontProxyClient = "front-proxy-client"

// frontProxyFiles writes a CA and a client certificate signed by it into dir, as kubeadm
// does for the aggregation layer, and returns the API server flags that use them.
func frontProxyFiles(dir string) (map[string]string, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "front-proxy-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: frontProxyClient},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"front-proxy-ca.crt":     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"front-proxy-client.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"front-proxy-client.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
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
