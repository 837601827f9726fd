package certificate

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// The pods' certificates are shown against the Secret's: which pod still serves another one,
// how long each has left, a refused Secret and a failed handshake said as such.
func TestCertificatesAreShownAgainstTheSecret(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	soon, past := metav1.NewTime(now.Add(30*time.Hour)), metav1.NewTime(now.Add(-time.Hour))
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "cache"}, Spec: v1beta1.ValkeyClusterSpec{TLS: v1beta1.TLSSpec{Mode: v1beta1.TLSOnly, SecretRef: &v1beta1.SecretRef{Name: "cache-tls"}}}}
	vc.Status.TLS = &v1beta1.TLSStatus{
		Secret:  &v1beta1.CertificateInfo{Serial: "B2", Subject: "CN=cache", Issuer: "CN=ca", NotAfter: &past},
		Refused: "TLS Secret cache-tls: the certificate does not verify against its ca.crt now: x509: certificate has expired",
		Nodes: []v1beta1.NodeCertificate{
			{Pod: "cache-0", CertificateInfo: v1beta1.CertificateInfo{Serial: "A1", Subject: "CN=cache", Issuer: "CN=ca", NotAfter: &soon, DNSNames: []string{"*.cache-nodes.ns.svc"}}},
			{Pod: "cache-1", CertificateInfo: v1beta1.CertificateInfo{Serial: "B2", NotAfter: &past}, MatchesSecret: true},
			{Pod: "cache-2", Error: "x509: certificate signed by unknown authority"},
		},
	}
	var out bytes.Buffer
	if err := Print(&out, vc, now); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"TLS mode:  TLSOnly",
		"cache-tls  serial B2  expires 2026-11-26T11:00:00Z (EXPIRED)",
		"REFUSED:   TLS Secret cache-tls",
		"cache-0  A1      2026-11-27T18:00:00Z (in 30h0m0s)  no",
		"*.cache-nodes.ns.svc",
		"yes",
		"cache-2  -       -",
		"handshake failed: x509: certificate signed by unknown authority",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	vc.Spec.TLS.SecretRef, vc.Spec.TLS.IssuerRef = nil, &v1beta1.IssuerRef{Name: "ca"}
	vc.Status.TLS.Certificate = &v1beta1.CertificateRequestStatus{Name: "cache-tls", Ready: "False", Message: "Issuing certificate as Secret does not exist"}
	out.Reset()
	if err := Print(&out, vc, now); err != nil || !strings.Contains(out.String(), "Issued by: cert-manager Certificate cache-tls  Ready False  (Issuing certificate as Secret does not exist)") {
		t.Errorf("with an issuer: %q, %v", out.String(), err)
	}
	vc.Status.TLS = nil
	out.Reset()
	if err := Print(&out, vc, now); err != nil || !strings.Contains(out.String(), "no pod presents a certificate") {
		t.Errorf("without TLS: %q, %v", out.String(), err)
	}
}
