package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/internal/testcert"
)

// A TLS Secret is checked before the operator trusts it: every key present, ca.crt a
// certificate, and the certificate verifying against it now. An expired certificate, one of
// another CA, or a missing key is refused with a reason that names it; nothing is needed while
// no pod serves TLS and the spec asks for none.
func TestATLSSecretIsCheckedBeforeItIsUsed(t *testing.T) {
	c := apiClient(t)
	ctx := context.Background()
	ns := newNamespace(t, c, "tls-")
	now := time.Now()
	r := &Reconciler{Client: c, APIReader: c, Now: func() time.Time { return now }}
	ca, err := testcert.NewCA("ca")
	if err != nil {
		t.Fatal(err)
	}
	other, err := testcert.NewCA("other")
	if err != nil {
		t.Fatal(err)
	}
	good, _ := ca.Issue(10, []string{"*.c-nodes." + ns.Name + ".svc"}, nil, now.Add(-time.Hour), 24*time.Hour)
	expired, _ := ca.Issue(11, []string{"*.c-nodes." + ns.Name + ".svc"}, nil, now.Add(-48*time.Hour), 24*time.Hour)
	foreign, _ := other.Issue(12, []string{"*.c-nodes." + ns.Name + ".svc"}, nil, now.Add(-time.Hour), 24*time.Hour)
	secret := func(name string, data map[string][]byte) {
		t.Helper()
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name}, Type: corev1.SecretTypeTLS, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	secret("good", map[string][]byte{"tls.crt": good.CertPEM, "tls.key": good.KeyPEM, "ca.crt": ca.PEM})
	secret("expired", map[string][]byte{"tls.crt": expired.CertPEM, "tls.key": expired.KeyPEM, "ca.crt": ca.PEM})
	secret("foreign", map[string][]byte{"tls.crt": foreign.CertPEM, "tls.key": foreign.KeyPEM, "ca.crt": ca.PEM})
	secret("noca", map[string][]byte{"tls.crt": good.CertPEM, "tls.key": good.KeyPEM})

	cluster := func(mode v1beta1.TLSMode, secretName string) *v1beta1.ValkeyCluster {
		vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c", UID: types.UID("uid-" + secretName)},
			Spec: v1beta1.ValkeyClusterSpec{TLS: v1beta1.TLSSpec{Mode: mode}}}
		if secretName != "" {
			vc.Spec.TLS.SecretRef = &v1beta1.SecretRef{Name: secretName}
		}
		return vc
	}
	if cfg, err := r.tlsConfig(ctx, cluster(v1beta1.TLSDisabled, ""), nil); cfg != nil || err != nil {
		t.Fatalf("no TLS asked or served: want nothing, got %v, %v", cfg, err)
	}
	served := map[string]*corev1.Pod{"c-0": {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{kube.AnnotationTLS: "TLSOnly"}}}}
	if _, err := r.tlsConfig(ctx, cluster(v1beta1.TLSDisabled, ""), served); err == nil || !strings.Contains(err.Error(), "secretRef is empty") {
		t.Fatalf("a pod serves TLS while the spec names no Secret: %v", err)
	}
	if cfg, err := r.tlsConfig(ctx, cluster(v1beta1.TLSOnly, "good"), nil); err != nil || cfg == nil || cfg.RootCAs == nil {
		t.Fatalf("a good Secret: %v, %v", cfg, err)
	}
	// The Secret turns bad (an expired certificate put in it): refused and said, and the last
	// good configuration stays in use, since the nodes still serve what they loaded.
	vc := cluster(v1beta1.TLSOnly, "good")
	var s corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: "good"}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data["tls.crt"], s.Data["tls.key"] = expired.CertPEM, expired.KeyPEM
	if err := c.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	now = now.Add(tlsReread + time.Second)
	if cfg, err := r.tlsConfig(ctx, vc, nil); err == nil || cfg == nil {
		t.Fatalf("a Secret turned bad: want the error and the last good configuration, got %v, %v", cfg, err)
	}
	for name, want := range map[string]string{
		"expired": "does not verify against its ca.crt now",
		"foreign": "does not verify against its ca.crt now",
		"noca":    "lacks ca.crt",
		"absent":  "TLS Secret absent",
	} {
		if _, err := r.tlsConfig(ctx, cluster(v1beta1.TLSPlainAndTLS, name), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Secret %s: want %q, got %v", name, want, err)
		}
	}
}

// TLS is not turned on before its certificate is usable: with an issuer whose Secret does not
// exist yet (cert-manager not installed here, or not done), the pods are built without TLS and
// the reason names the Certificate's state; with no pod at all the cluster is fresh (nothing is
// created until then). Once the Secret holds a certificate that verifies, TLSOnly asked of
// pods that serve no TLS goes through Both; once a pod serves TLS the spec is followed whatever
// the Secret holds (the last good configuration stays in use), since holding TLS back then
// would roll the pods back to plain.
func TestTLSWaitsForAUsableCertificateBeforeAnyPodRollsOntoIt(t *testing.T) {
	c := apiClient(t)
	ctx := context.Background()
	ns := newNamespace(t, c, "tlsgate-")
	now := time.Now()
	r := &Reconciler{Client: c, APIReader: c, Now: func() time.Time { return now }}
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c", UID: "gate"},
		Spec: v1beta1.ValkeyClusterSpec{TLS: v1beta1.TLSSpec{Mode: v1beta1.TLSOnly, IssuerRef: &v1beta1.IssuerRef{Name: "ca"}}}}
	type result struct {
		mode  v1beta1.TLSMode
		why   string
		fresh bool
	}
	mode := func(vc *v1beta1.ValkeyCluster, cert *v1beta1.CertificateRequestStatus) result {
		t.Helper()
		g, err := r.tlsGate(ctx, vc, cert)
		if err != nil {
			t.Fatal(err)
		}
		return result{g.mode, g.why, g.fresh}
	}
	if got := mode(&v1beta1.ValkeyCluster{ObjectMeta: vc.ObjectMeta}, nil); got != (result{}) {
		t.Fatalf("no TLS asked: %+v", got)
	}
	cert := r.certificateStatus(ctx, vc)
	if cert == nil || cert.Name != "c-tls" || cert.Ready != "Unknown" || !strings.Contains(cert.Message, "cert-manager is not installed") {
		t.Fatalf("Certificate status without cert-manager: %+v", cert)
	}
	got := mode(vc, cert)
	if got.mode != v1beta1.TLSDisabled || !got.fresh || !strings.Contains(got.why, "TLS Secret c-tls") || !strings.Contains(got.why, "not found") || !strings.Contains(got.why, "cert-manager is not installed") {
		t.Fatalf("issuer, no Secret, no pod: %+v", got)
	}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c-0", Labels: kube.SelectorLabels(vc)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "valkey", Image: "valkey"}}}}
	if err := c.Create(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if got := mode(vc, cert); got.mode != v1beta1.TLSDisabled || got.fresh || got.why == "" {
		t.Fatalf("issuer, no Secret, a plain pod: %+v", got)
	}
	ca, err := testcert.NewCA("ca")
	if err != nil {
		t.Fatal(err)
	}
	good, err := ca.Issue(20, []string{"*.c-nodes." + ns.Name + ".svc"}, nil, now.Add(-time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c-tls"}, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": good.CertPEM, "tls.key": good.KeyPEM, "ca.crt": ca.PEM}}
	if err := c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	now = now.Add(tlsReread + time.Second)
	if got := mode(vc, cert); got != (result{mode: v1beta1.TLSPlainAndTLS}) {
		t.Fatalf("usable Secret, TLSOnly asked of plain pods: want Both first, got %+v", got)
	}
	delete(s.Data, "ca.crt")
	if err := c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	now = now.Add(tlsReread + time.Second)
	if got := mode(vc, cert); !strings.Contains(got.why, "lacks ca.crt") {
		t.Fatalf("no pod serves TLS and the Secret lost its key: %+v", got)
	}
	plain.Annotations = map[string]string{kube.AnnotationTLS: "Both"}
	if err := c.Update(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if got := mode(vc, cert); got != (result{mode: v1beta1.TLSOnly}) {
		t.Fatalf("a pod serves TLS: the spec is followed, got %+v", got)
	}
}
