package kube

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

func buildTLS(mode v1beta1.TLSMode) Desired {
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1beta1.ValkeyClusterSpec{TLS: v1beta1.TLSSpec{Mode: mode, SecretRef: &v1beta1.SecretRef{Name: "c-tls"}}}}
	v1beta1.SetDefaults(&vc.Spec)
	return Build(vc, metav1.OwnerReference{Name: "c"})
}

// Each TLS mode is a revision of its own (a roll), mounts the certificate, and opens the ports
// it serves, on the pods and the Services; TLSOnly serves nothing in plain and probes over TLS.
func TestTLSModesRenderPortsProbesAndTheirOwnRevision(t *testing.T) {
	off, both, only := buildTLS(v1beta1.TLSDisabled), buildTLS(v1beta1.TLSPlainAndTLS), buildTLS(v1beta1.TLSOnly)
	if off.Revision == both.Revision || both.Revision == only.Revision {
		t.Fatal("each TLS mode must be a revision of its own: turning TLS on or off is a roll")
	}
	ports := func(d Desired) string {
		var out []string
		for _, p := range d.Client.Spec.Ports {
			out = append(out, p.Name)
		}
		for _, p := range d.StatefulSet.Spec.Template.Spec.Containers[0].Ports {
			out = append(out, "pod:"+p.Name)
		}
		return strings.Join(out, ",")
	}
	for d, want := range map[*Desired]string{&off: "valkey,pod:valkey", &both: "valkey,valkey-tls,pod:valkey,pod:valkey-tls", &only: "valkey-tls,pod:valkey-tls"} {
		if got := ports(*d); got != want {
			t.Errorf("ports %s, want %s", got, want)
		}
	}
	conf := only.Config.Data["valkey.conf"]
	for _, line := range []string{"port 0\n", "tls-port 6380\n", "tls-cert-file " + valkey.TLSDir + "/tls.crt\n", "tls-replication yes\n", "tls-auth-clients no\n"} {
		if !strings.Contains(conf, line) {
			t.Errorf("TLSOnly valkey.conf lacks %q:\n%s", line, conf)
		}
	}
	if strings.Contains(off.Config.Data["valkey.conf"], "tls-") {
		t.Error("a cluster without TLS renders tls- directives")
	}
	c := only.StatefulSet.Spec.Template.Spec.Containers[0]
	if probe := strings.Join(c.ReadinessProbe.Exec.Command, " "); !strings.Contains(probe, "--tls --cacert") || !strings.Contains(probe, "-p 6380") {
		t.Errorf("TLSOnly readiness probe: %s", probe)
	}
	if c.LivenessProbe.TCPSocket.Port.StrVal != "valkey-tls" {
		t.Errorf("TLSOnly liveness probe on %v", c.LivenessProbe.TCPSocket.Port)
	}
	if got := only.StatefulSet.Spec.Template.Annotations[AnnotationTLS]; got != string(valkey.TLSOnly) {
		t.Errorf("pod template TLS annotation %q", got)
	}
	mounted := false
	for _, v := range only.StatefulSet.Spec.Template.Spec.Volumes {
		mounted = mounted || (v.Secret != nil && v.Secret.SecretName == "c-tls")
	}
	if !mounted {
		t.Error("the TLS Secret is not mounted")
	}
}

// With spec.tls.issuerRef the operator asks cert-manager for a Certificate whose Secret the pods
// mount: it names every pod (the headless wildcard) and each Service, allows client
// authentication (mutual TLS uses the node certificate), and follows the issuer given.
func TestAnIssuerGetsACertificateNamingEveryPodAndService(t *testing.T) {
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1beta1.ValkeyClusterSpec{TLS: v1beta1.TLSSpec{
		Mode: v1beta1.TLSPlainAndTLS, IssuerRef: &v1beta1.IssuerRef{Name: "ca", Kind: "ClusterIssuer"}, Duration: &metav1.Duration{Duration: time.Hour},
	}}}
	v1beta1.SetDefaults(&vc.Spec)
	d := Build(vc, metav1.OwnerReference{Name: "c", UID: "u"})
	if d.Certificate == nil {
		t.Fatal("no Certificate for an issuer")
	}
	spec, _ := d.Certificate.Object["spec"].(map[string]any)
	if spec["secretName"] != "c-tls" || d.Certificate.GetName() != "c-tls" || d.Certificate.GetNamespace() != "ns" {
		t.Errorf("Certificate %s/%s with secret %v, want ns/c-tls", d.Certificate.GetNamespace(), d.Certificate.GetName(), spec["secretName"])
	}
	if ref, _ := spec["issuerRef"].(map[string]any); ref["name"] != "ca" || ref["kind"] != "ClusterIssuer" || ref["group"] != "cert-manager.io" {
		t.Errorf("issuerRef %v", ref)
	}
	if spec["duration"] != "1h0m0s" || spec["renewBefore"] != nil {
		t.Errorf("duration %v renewBefore %v", spec["duration"], spec["renewBefore"])
	}
	names := map[string]bool{}
	for _, n := range spec["dnsNames"].([]any) {
		names[n.(string)] = true
	}
	for _, want := range []string{"*.c-nodes.ns.svc", "c.ns.svc", "c-replicas.ns.svc", "c-nodes.ns.svc", "c.ns.svc.cluster.local"} {
		if !names[want] {
			t.Errorf("dnsNames lack %s: %v", want, spec["dnsNames"])
		}
	}
	usages := fmt.Sprint(spec["usages"])
	if !strings.Contains(usages, "client auth") || !strings.Contains(usages, "server auth") {
		t.Errorf("usages %s", usages)
	}
	vol := d.StatefulSet.Spec.Template.Spec.Volumes
	if got := vol[len(vol)-1]; got.Name != "tls" || got.Secret == nil || got.Secret.SecretName != "c-tls" {
		t.Errorf("pods mount %+v, want the Certificate's Secret c-tls", got)
	}
	if len(d.Certificate.GetOwnerReferences()) != 1 || d.Certificate.GetOwnerReferences()[0].UID != "u" {
		t.Errorf("Certificate owners %v", d.Certificate.GetOwnerReferences())
	}
	if Build(withoutIssuer(vc), metav1.OwnerReference{}).Certificate != nil {
		t.Error("a Certificate without an issuer")
	}
}

func withoutIssuer(vc *v1beta1.ValkeyCluster) *v1beta1.ValkeyCluster {
	c := vc.DeepCopy()
	c.Spec.TLS.IssuerRef, c.Spec.TLS.SecretRef = nil, &v1beta1.SecretRef{Name: "mine"}
	c.Spec.TLS.Duration, c.Spec.TLS.RenewBefore = nil, nil
	return c
}

// A Cluster topology with TLS runs its bus and replication over TLS on every node (tls-cluster
// and tls-replication in the rendered file, not per link: the bus cannot be mixed); a
// replication group never renders tls-cluster.
func TestAClusterTopologyWithTLSRunsItsBusOverTLS(t *testing.T) {
	for _, mode := range []v1beta1.TLSMode{v1beta1.TLSPlainAndTLS, v1beta1.TLSOnly} {
		vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1beta1.ValkeyClusterSpec{
			Topology: v1beta1.TopologyCluster, TLS: v1beta1.TLSSpec{Mode: mode, SecretRef: &v1beta1.SecretRef{Name: "c-tls"}}}}
		v1beta1.SetDefaults(&vc.Spec)
		conf := Build(vc, metav1.OwnerReference{}).Config.Data["valkey.conf"]
		for _, line := range []string{"tls-cluster yes\n", "tls-replication yes\n", "cluster-enabled yes\n"} {
			if !strings.Contains(conf, line) {
				t.Errorf("%s cluster: valkey.conf lacks %q:\n%s", mode, line, conf)
			}
		}
	}
	if conf := buildTLS(v1beta1.TLSPlainAndTLS).Config.Data["valkey.conf"]; strings.Contains(conf, "tls-cluster") {
		t.Errorf("a replication group renders tls-cluster:\n%s", conf)
	}
}
