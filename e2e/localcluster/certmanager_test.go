package localcluster_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
)

var (
	cmCertificatesGVR        = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	cmCertificateRequestsGVR = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificaterequests"}
	cmIssuersGVR             = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "issuers"}
	cmClusterIssuersGVR      = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "clusterissuers"}
)

// TestCertManager runs the real cert-manager in the cluster through the chain a Valkey
// installation uses: a self-signed ClusterIssuer signs a CA, a CA Issuer signs a leaf for two
// DNS names, the leaf verifies against the ca.crt it was delivered with, and a renewal the way
// `cmctl renew` asks for one puts a new certificate into the same Secret.
func TestCertManager(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 5*time.Minute)
	start := time.Now()
	if err := cl.StartCertManager(ctx); err != nil {
		t.Fatalf("starting cert-manager: %v", err)
	}
	t.Logf("cert-manager started in %s", time.Since(start).Round(time.Millisecond))
	// A second call on the same cluster does nothing.
	if err := cl.StartCertManager(ctx); err != nil {
		t.Fatalf("starting cert-manager a second time: %v", err)
	}
	dyn, err := dynamic.NewForConfig(cl.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}

	rootIssuer := "selfsigned-" + ns
	cmCreate(t, ctx, dyn, cmClusterIssuersGVR, "", map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
		"metadata": map[string]any{"name": rootIssuer},
		"spec":     map[string]any{"selfSigned": map[string]any{}},
	})
	t.Cleanup(func() {
		_ = dyn.Resource(cmClusterIssuersGVR).Delete(context.Background(), rootIssuer, metav1.DeleteOptions{})
	})
	cmCreate(t, ctx, dyn, cmCertificatesGVR, ns, map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "ca"},
		"spec": map[string]any{
			"isCA":       true,
			"commonName": "valkey test CA",
			"secretName": "ca",
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
			"issuerRef":  map[string]any{"name": rootIssuer, "kind": "ClusterIssuer", "group": "cert-manager.io"},
		},
	})
	cmWaitCertificate(t, ctx, dyn, ns, "ca", "Ready", cmReady)
	cmCreate(t, ctx, dyn, cmIssuersGVR, ns, map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
		"metadata": map[string]any{"name": "ca"},
		"spec":     map[string]any{"ca": map[string]any{"secretName": "ca"}},
	})
	dnsNames := []string{"a.example.svc", "b.example.svc"}
	cmCreate(t, ctx, dyn, cmCertificatesGVR, ns, map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "leaf"},
		"spec": map[string]any{
			"secretName": "leaf-tls",
			"dnsNames":   []any{dnsNames[0], dnsNames[1]},
			"duration":   "1h",
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
			"issuerRef":  map[string]any{"name": "ca", "kind": "Issuer", "group": "cert-manager.io"},
		},
	})
	// Issued whole before the renewal is asked for: cert-manager sets Ready as soon as the
	// Secret holds a valid certificate, while its issuing controller may still be finishing
	// the first issuance (Issuing still True, status.revision not yet 1). A renewal asked
	// then is taken for that issuance and ends with the first certificate (seen in CI: no
	// second CertificateRequest was ever made).
	cmWaitCertificate(t, ctx, dyn, ns, "leaf", "Ready, issued (revision 1) and no longer Issuing", cmIssued)
	first := cmVerifyLeaf(t, ctx, ns, "leaf-tls", dnsNames)
	if d := first.NotAfter.Sub(first.NotBefore); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("leaf is valid for %s, want the Certificate's duration of 1h", d)
	}

	// What `cmctl renew` does: the Issuing condition, set on the status subresource, is the
	// trigger controller's own signal to issue now.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crt, err := dyn.Resource(cmCertificatesGVR).Namespace(ns).Get(ctx, "leaf", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cmSetCondition(crt, map[string]any{
			"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
			"message":            "Certificate re-issuance manually triggered",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			"observedGeneration": crt.GetGeneration(),
		})
		_, err = dyn.Resource(cmCertificatesGVR).Namespace(ns).UpdateStatus(ctx, crt, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("triggering a renewal: %v", err)
	}
	var renewed *x509.Certificate
	cmWaitCertificate(t, ctx, dyn, ns, "leaf", "a certificate with a serial other than "+first.SerialNumber.String()+" in Secret leaf-tls, and Ready", func(c *unstructured.Unstructured) (bool, string) {
		s, err := cl.Clientset().CoreV1().Secrets(ns).Get(ctx, "leaf-tls", metav1.GetOptions{})
		if err != nil {
			return false, "Secret leaf-tls: " + err.Error()
		}
		leaf, _, err := cmParseChain(s.Data["tls.crt"])
		if err != nil {
			return false, "Secret leaf-tls: tls.crt: " + err.Error()
		}
		seen := "Secret leaf-tls holds serial " + leaf.SerialNumber.String()
		if leaf.SerialNumber.Cmp(first.SerialNumber) == 0 || cmCondition(c, "Ready") != "True" || cmCondition(c, "Issuing") != "" {
			return false, seen
		}
		renewed = leaf
		return true, seen
	})
	if again := cmVerifyLeaf(t, ctx, ns, "leaf-tls", dnsNames); again.SerialNumber.Cmp(renewed.SerialNumber) != 0 {
		t.Fatalf("the Secret changed again after the renewal: serial %s, then %s", renewed.SerialNumber, again.SerialNumber)
	}
	crt, err := dyn.Resource(cmCertificatesGVR).Namespace(ns).Get(ctx, "leaf", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev, _, _ := unstructured.NestedInt64(crt.Object, "status", "revision"); rev != 2 {
		t.Errorf("leaf's status.revision = %d after one renewal, want 2", rev)
	}
	t.Logf("issued serial %s, renewed as serial %s", first.SerialNumber, renewed.SerialNumber)
}

func cmReady(c *unstructured.Unstructured) (bool, string) {
	return cmCondition(c, "Ready") == "True", ""
}

// cmIssued: Ready, and the issuance behind it finished (status.revision set, Issuing gone).
func cmIssued(c *unstructured.Unstructured) (bool, string) {
	revision, _, _ := unstructured.NestedInt64(c.Object, "status", "revision")
	issuing := cmCondition(c, "Issuing")
	return cmCondition(c, "Ready") == "True" && revision >= 1 && issuing != "True", fmt.Sprintf("revision %d, Issuing %q", revision, issuing)
}

func cmCreate(t *testing.T, ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string, obj map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	var err error
	if ns == "" {
		_, err = dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{})
	} else {
		_, err = dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// cmWaitCertificate waits up to two minutes for done(Certificate); its failure says what was
// last seen of the Certificate, of its CertificateRequests, and what done last reported.
func cmWaitCertificate(t *testing.T, ctx context.Context, dyn dynamic.Interface, ns, name, what string, done func(*unstructured.Unstructured) (bool, string)) {
	t.Helper()
	const timeout = 2 * time.Minute
	var last *unstructured.Unstructured
	var lastErr error
	var detail string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		c, err := dyn.Resource(cmCertificatesGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			lastErr = err
			return false, nil
		}
		last, lastErr = c, nil
		var ok bool
		ok, detail = done(c)
		return ok, nil
	})
	if err == nil {
		return
	}
	seen := "Certificate: " + fmt.Sprint(lastErr)
	if last != nil {
		seen = "Certificate conditions: " + cmConditions(last)
	}
	if detail != "" {
		seen += "\n  " + detail
	}
	if crs, err := dyn.Resource(cmCertificateRequestsGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{}); err == nil {
		for _, cr := range crs.Items {
			seen += fmt.Sprintf("\n  CertificateRequest %s: %s", cr.GetName(), cmConditions(&cr))
		}
	}
	t.Fatalf("Certificate %s/%s: no %s after %s (%v)\n%s\ncert-manager's last log lines:\n%s", ns, name, what, timeout, err, seen,
		localcluster.SuiteLog(20, "[cert-manager]"))
}

// cmCondition is the status of the Certificate's condition of that type, "" when it has none.
func cmCondition(obj *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, x := range conds {
		if m, ok := x.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

func cmConditions(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if len(conds) == 0 {
		return "none"
	}
	var out []string
	for _, x := range conds {
		m, _ := x.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v (%v: %v)", m["type"], m["status"], m["reason"], m["message"]))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// cmSetCondition replaces the condition of the same type, or adds it.
func cmSetCondition(obj *unstructured.Unstructured, cond map[string]any) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	out := []any{cond}
	for _, x := range conds {
		if m, ok := x.(map[string]any); ok && m["type"] != cond["type"] {
			out = append(out, m)
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, out, "status", "conditions")
}

// cmParseChain splits a tls.crt into its leaf and the certificates after it.
func cmParseChain(data []byte) (*x509.Certificate, []*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, nil, fmt.Errorf("no certificate in tls.crt")
	}
	return certs[0], certs[1:], nil
}

// cmVerifyLeaf checks that the Secret's tls.crt verifies against its ca.crt for every DNS name,
// as a client that trusts ca.crt would, and that the key is the certificate's.
func cmVerifyLeaf(t *testing.T, ctx context.Context, ns, secret string, dnsNames []string) *x509.Certificate {
	t.Helper()
	s, err := cl.Clientset().CoreV1().Secrets(ns).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading Secret %s: %v", secret, err)
	}
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if len(s.Data[k]) == 0 {
			t.Fatalf("Secret %s has no %s (keys: %v)", secret, k, cmKeys(s.Data))
		}
	}
	leaf, intermediates, err := cmParseChain(s.Data["tls.crt"])
	if err != nil {
		t.Fatalf("Secret %s: tls.crt: %v", secret, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.Data["ca.crt"]) {
		t.Fatalf("Secret %s: ca.crt holds no certificate", secret)
	}
	inter := x509.NewCertPool()
	for _, c := range intermediates {
		inter.AddCert(c)
	}
	for _, name := range dnsNames {
		_, err := leaf.Verify(x509.VerifyOptions{
			DNSName: name, Roots: roots, Intermediates: inter,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			t.Errorf("Secret %s: tls.crt (serial %s, names %v) does not verify for %s against ca.crt: %v", secret, leaf.SerialNumber, leaf.DNSNames, name, err)
		}
	}
	if leaf.IsCA {
		t.Errorf("Secret %s: the leaf is a CA", secret)
	}
	if _, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"]); err != nil {
		t.Errorf("Secret %s: tls.key does not go with tls.crt: %v", secret, err)
	}
	return leaf
}

func cmKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
