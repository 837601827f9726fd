package kube

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

func buildTLS(mode v1alpha1.TLSMode) Desired {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1alpha1.ValkeyClusterSpec{TLS: v1alpha1.TLSSpec{Mode: mode, SecretName: "c-tls"}}}
	v1alpha1.SetDefaults(&vc.Spec)
	return Build(vc, metav1.OwnerReference{Name: "c"})
}

// Each TLS mode is a revision of its own (a roll), mounts the certificate, and opens the ports
// it serves, on the pods and the Services; TLSOnly serves nothing in plain and probes over TLS.
func TestTLSModesRenderPortsProbesAndTheirOwnRevision(t *testing.T) {
	off, both, only := buildTLS(v1alpha1.TLSDisabled), buildTLS(v1alpha1.TLSBoth), buildTLS(v1alpha1.TLSOnly)
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
