package operatorsuite

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/internal/testcert"
)

// cmObject is a cert-manager object of kind in ns, from its spec.
func cmObject(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("cert-manager.io/v1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// cmCertificate reads a Certificate (nil when there is none).
func cmCertificate(t *testing.T, ctx context.Context, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kube.CertificateGVK)
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	return u
}

// caIssuer runs the chain an installation uses, in ns: a self-signed Issuer signs a CA
// Certificate, and the Issuer "ca" signs with it.
func caIssuer(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	if err := cl.StartCertManager(ctx); err != nil {
		t.Fatalf("starting cert-manager: %v", err)
	}
	for _, o := range []*unstructured.Unstructured{
		cmObject("Issuer", ns, "selfsigned", map[string]any{"selfSigned": map[string]any{}}),
		cmObject("Certificate", ns, "root", map[string]any{"isCA": true, "commonName": "valkey e2e root", "secretName": "root",
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)}, "issuerRef": map[string]any{"name": "selfsigned", "kind": "Issuer"}}),
		cmObject("Issuer", ns, "ca", map[string]any{"ca": map[string]any{"secretName": "root"}}),
	} {
		if err := k.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// secretCA is the CA a Secret's ca.crt holds, as a client's trust pool, and its certificate.
func secretCA(t *testing.T, ctx context.Context, ns, name string) (*testcert.CA, *x509.Certificate) {
	t.Helper()
	var s corev1.Secret
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		t.Fatal(err)
	}
	ca, err := testcert.FromPEM(s.Data["ca.crt"])
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := testcert.ParsePEM(s.Data["tls.crt"])
	if err != nil {
		t.Fatal(err)
	}
	return ca, leaf
}

// TLS from a real cert-manager: a new cluster asking TLSOnly from an Issuer waits for the
// Certificate the operator asks for (nothing runs before it is usable), then starts serving
// TLS only with it, every pod verified by the Secret's CA under its DNS name; a renewal forced
// as cmctl renew does is loaded by every pod without a restart and recorded; a changed
// duration updates the Certificate; and handing the Secret over to the user (secretName
// instead of issuer) deletes the Certificate without a roll.
func TestTLSFromCertManagerIsIssuedRenewedAndLoadedWithoutARestart(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 8*time.Minute)
	caIssuer(t, ctx, ns)
	vc := newCluster(ns, "issued", v1alpha1.TopologyReplication, 3)
	vc.Spec.TLS = v1alpha1.TLSSpec{Mode: v1alpha1.TLSOnly, Issuer: &v1alpha1.TLSIssuer{Name: "ca"}}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "issued", 3*time.Minute, "Steady with 3 serving cert-manager's certificate", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(3)(vc) && vc.Status.TLS != nil && vc.Status.TLS.Certificate != nil && vc.Status.TLS.Certificate.Ready == "True" &&
			vc.Status.Machine != nil && vc.Status.Machine.Certificate != ""
	})
	// No pod ever ran without TLS: the StatefulSet was made once the certificate was there.
	var pods corev1.PodList
	if err := k.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{kube.LabelCluster: "issued"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Annotations[kube.AnnotationTLS] != "TLSOnly" || p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("%s: TLS %q, restarts %d: want TLSOnly from its first start", p.Name, p.Annotations[kube.AnnotationTLS], p.Status.ContainerStatuses[0].RestartCount)
		}
	}
	ca, leaf := secretCA(t, ctx, ns, "issued-tls")
	serial := strings.ToUpper(leaf.SerialNumber.Text(16))
	if vc.Status.Machine.Certificate != serial {
		t.Errorf("the machine recorded serial %s, the Secret holds %s", vc.Status.Machine.Certificate, serial)
	}
	pass := password(t, vc)
	runs := map[string]string{}
	for _, n := range vc.Status.Nodes {
		name := n.Pod + ".issued-nodes." + ns + ".svc"
		if got := servedSerial(t, ca, n.IP, name); got != serial {
			t.Errorf("%s serves %s, the Secret holds %s", n.Pod, got, serial)
		}
		if c, err := tlsClient(net.JoinHostPort(n.IP, "6379"), pass, nil); err == nil {
			c.Close()
			t.Errorf("%s: plain TCP accepted in TLSOnly", n.Pod)
		}
		c, err := tlsClient(net.JoinHostPort(n.IP, "6380"), pass, ca.ClientConfig(name))
		if err != nil {
			t.Fatalf("%s: %v", n.Pod, err)
		}
		runs[n.Pod] = infoFrom(t, c, "server")["run_id"]
		if repl := infoFrom(t, c, "replication"); n.Role == v1alpha1.NodeRoleReplica && (repl["master_port"] != "6380" || repl["master_link_status"] != "up") {
			t.Errorf("%s: replica not following over TLS: port %s, link %s", n.Pod, repl["master_port"], repl["master_link_status"])
		}
		c.Close()
	}

	// A renewal as cmctl renew asks for one: the Issuing condition.
	cert := cmCertificate(t, ctx, ns, "issued-tls")
	conds, _, _ := unstructured.NestedSlice(cert.Object, "status", "conditions")
	conds = append(conds, map[string]any{"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
		"message": "renewal asked by the e2e test", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)})
	if err := unstructured.SetNestedSlice(cert.Object, conds, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if err := k.Status().Update(ctx, cert); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "issued", 2*time.Minute, "the renewed certificate recorded and served by every pod", func(vc *v1alpha1.ValkeyCluster) bool {
		if !steadyWith(3)(vc) || vc.Status.Machine.Certificate == serial || vc.Status.TLS == nil || len(vc.Status.TLS.Nodes) != 3 {
			return false
		}
		for _, n := range vc.Status.TLS.Nodes {
			if !n.MatchesSecret {
				return false
			}
		}
		return true
	})
	_, renewed := secretCA(t, ctx, ns, "issued-tls")
	newSerial := strings.ToUpper(renewed.SerialNumber.Text(16))
	for _, n := range vc.Status.Nodes {
		name := n.Pod + ".issued-nodes." + ns + ".svc"
		if got := servedSerial(t, ca, n.IP, name); got != newSerial {
			t.Errorf("%s serves %s after the renewal, want %s", n.Pod, got, newSerial)
		}
		c, err := tlsClient(net.JoinHostPort(n.IP, "6380"), pass, ca.ClientConfig(name))
		if err != nil {
			t.Fatal(err)
		}
		if got := infoFrom(t, c, "server")["run_id"]; got != runs[n.Pod] {
			t.Errorf("%s restarted for the renewal (run id %s, was %s)", n.Pod, got, runs[n.Pod])
		}
		c.Close()
	}
	if !strings.Contains(strings.Join(eventsSince(vc, 1), ","), "certificate-reloaded") {
		t.Errorf("history lacks certificate-reloaded: %v", eventsSince(vc, 1))
	}

	// A changed duration reaches the Certificate.
	vc = get(t, ns, "issued")
	vc.Spec.TLS.Issuer.Duration = &metav1.Duration{Duration: 48 * time.Hour}
	update(t, ctx, vc)
	waitFor(t, ns, "issued", time.Minute, "the Certificate's duration updated", func(*v1alpha1.ValkeyCluster) bool {
		d, _, _ := unstructured.NestedString(cmCertificate(t, ctx, ns, "issued-tls").Object, "spec", "duration")
		return d == "48h0m0s"
	})

	// The user takes the Secret over: the Certificate goes, the pods keep what they mount.
	podsNow := func() map[string]string {
		var pods corev1.PodList
		if err := k.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{kube.LabelCluster: "issued"}); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range pods.Items {
			out[p.Name] = string(p.UID) + "/" + p.Annotations[kube.AnnotationRevision]
		}
		return out
	}
	before := podsNow()
	vc = get(t, ns, "issued")
	vc.Spec.TLS.Issuer, vc.Spec.TLS.SecretName = nil, "issued-tls"
	update(t, ctx, vc)
	waitFor(t, ns, "issued", time.Minute, "the Certificate deleted", func(*v1alpha1.ValkeyCluster) bool {
		return cmCertificate(t, ctx, ns, "issued-tls") == nil
	})
	time.Sleep(3 * time.Second)
	if after := podsNow(); fmt.Sprint(after) != fmt.Sprint(before) || !steadyWith(3)(get(t, ns, "issued")) {
		t.Errorf("taking the Secret over touched the pods: %v, were %v", after, before)
	}
}
