package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"time"
)

// CA is a certificate authority that signs certificates.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate (what a ca.crt holds).
	PEM []byte
}

// NewCA makes a self-signed CA named name, valid for a day.
func NewCA(name string) (*CA, error) { return NewCAFor(name, 24*time.Hour) }

// NewCAFor makes a self-signed CA named name, valid for validFor from an hour ago.
func NewCAFor(name string, validFor time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validFor),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Pair is a signed certificate and its key, PEM-encoded (tls.crt and tls.key).
type Pair struct {
	CertPEM, KeyPEM []byte
	Serial          *big.Int
}

// Issue signs a certificate for the DNS names and IPs, usable by servers and clients, valid
// from notBefore for validFor.
func (ca *CA) Issue(serial int64, names []string, ips []net.IP, notBefore time.Time, validFor time.Duration) (Pair, error) {
	return ca.Sign(Spec{Serial: serial, CommonName: firstOr(names, "valkey"), DNSNames: names, IPs: ips, NotBefore: notBefore, ValidFor: validFor,
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
}

// Spec is what a signed certificate says.
type Spec struct {
	Serial     int64
	CommonName string
	DNSNames   []string
	IPs        []net.IP
	NotBefore  time.Time
	ValidFor   time.Duration
	Usages     []x509.ExtKeyUsage
}

// Sign signs a certificate as s says, with a new key.
func (ca *CA) Sign(s Spec) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(s.Serial), Subject: pkix.Name{CommonName: s.CommonName},
		NotBefore: s.NotBefore, NotAfter: s.NotBefore.Add(s.ValidFor),
		DNSNames: s.DNSNames, IPAddresses: s.IPs,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: s.Usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return Pair{}, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
		Serial:  big.NewInt(s.Serial),
	}, nil
}

// ClientConfig verifies servers against the CA under serverName.
func (ca *CA) ClientConfig(serverName string) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

// ParsePEM parses the first certificate of a PEM block (a tls.crt or a ca.crt).
func ParsePEM(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("testcert: no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// FromPEM is a CA known by its certificate only (one that cert-manager made, say): it
// verifies (ClientConfig) but cannot sign.
func FromPEM(data []byte) (*CA, error) {
	cert, err := ParsePEM(data)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, PEM: data}, nil
}
