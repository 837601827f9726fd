package operatorsuite

import (
	"net"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// A running TLS cluster whose spec.tls.secretName moves to a Secret the operator refuses (its
// certificate names something else, not the cluster's pods) does not roll onto it: the pods
// keep the Secret they mount (same pods, same processes), status and an Event say why; once the
// spec names a Secret made for the cluster, the pods roll onto it.
func TestARunningClusterDoesNotRollOntoARefusedTLSSecret(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 5*time.Minute)
	ca := tlsSecret(t, ctx, ns, "keep")
	vc := newCluster(ns, "keep", v1alpha1.TopologyReplication, 2)
	vc.Spec.TLS = v1alpha1.TLSSpec{Mode: v1alpha1.TLSOnly, SecretName: "keep-tls"}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "keep", 2*time.Minute, "Steady with 2 ready, certificate 2 recorded", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(2)(vc) && vc.Status.Machine != nil && vc.Status.Machine.Certificate == "2"
	})
	secret := func(name string, serial int64, dnsName string) {
		t.Helper()
		pair, err := ca.Issue(serial, []string{dnsName}, nil, time.Now().Add(-time.Minute), 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM, "ca.crt": ca.PEM}}); err != nil {
			t.Fatal(err)
		}
	}
	// pods is each pod's uid and the Secret it mounts, by name.
	pods := func() map[string]string {
		t.Helper()
		var list corev1.PodList
		if err := k.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{kube.LabelCluster: "keep"}); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range list.Items {
			out[p.Name] = string(p.UID) + " mounting " + kube.MountedTLSSecret(&p.Spec)
		}
		return out
	}
	opPass := secretKey(t, vc, kube.KeyOperatorPassword)
	runID := func(n v1alpha1.NodeStatus) string {
		t.Helper()
		c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{net.JoinHostPort(n.IP, "6380")}, Username: "operator", Password: opPass,
			TLSConfig: ca.ClientConfig(n.Pod + ".keep-nodes." + ns + ".svc"), DisableCache: true, DisableRetry: true, ForceSingleClient: true})
		if err != nil {
			t.Fatalf("%s: %v", n.Pod, err)
		}
		defer c.Close()
		return infoFrom(t, c, "server")["run_id"]
	}
	before, runs, seq := pods(), map[string]string{}, vc.Status.History[len(vc.Status.History)-1].Seq
	for _, n := range vc.Status.Nodes {
		runs[n.Pod] = runID(n)
	}

	// A certificate of the same CA, made for an application of the namespace.
	secret("payments-tls", 3, "payments."+ns+".svc")
	vc.Spec.TLS.SecretName = "payments-tls"
	update(t, ctx, vc)
	refusal := "TLS Secret payments-tls: the certificate does not name the cluster's pods"
	waitFor(t, ns, "keep", time.Minute, "the Secret refused in status", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.ObservedGeneration == vc.Generation && vc.Status.TLS != nil &&
			strings.Contains(vc.Status.TLS.Refused, refusal) && strings.Contains(vc.Status.TLS.Refused, "the pods keep Secret keep-tls")
	})
	if note := eventNote(t, ctx, ns, "keep", "TLSRefused"); !strings.Contains(note, refusal) {
		t.Errorf("TLSRefused Event: %q, want it to say %q", note, refusal)
	}
	time.Sleep(3 * time.Second) // several turns with the refused Secret in the spec
	vc = get(t, ns, "keep")
	if !steadyWith(2)(vc) || vc.Status.History[len(vc.Status.History)-1].Seq != seq {
		t.Errorf("the cluster moved with a refused Secret in the spec:\n%s", summary(vc))
	}
	if got := pods(); len(got) != len(before) {
		t.Errorf("pods with a refused Secret in the spec: %v, were %v", got, before)
	} else {
		for name, was := range before {
			if got[name] != was {
				t.Errorf("%s with a refused Secret in the spec: %s, was %s", name, got[name], was)
			}
		}
	}
	for _, n := range vc.Status.Nodes {
		if got := runID(n); got != runs[n.Pod] {
			t.Errorf("%s restarted (run id %s, was %s)", n.Pod, got, runs[n.Pod])
		}
	}
	var sts appsv1.StatefulSet
	if err := k.Get(ctx, types.NamespacedName{Namespace: ns, Name: "keep"}, &sts); err != nil {
		t.Fatal(err)
	}
	if got := kube.MountedTLSSecret(&sts.Spec.Template.Spec); got != "keep-tls" {
		t.Errorf("the StatefulSet's template mounts %q, want keep-tls", got)
	}

	// A Secret made for the cluster: the pods roll onto it, and the refusal is gone.
	secret("keep-next", 4, "*.keep-nodes."+ns+".svc")
	vc = get(t, ns, "keep")
	vc.Spec.TLS.SecretName = "keep-next"
	update(t, ctx, vc)
	waitFor(t, ns, "keep", 3*time.Minute, "rolled onto keep-next, certificate 4 recorded", func(vc *v1alpha1.ValkeyCluster) bool {
		if !steadyWith(2)(vc) || vc.Status.Machine.Certificate != "4" || vc.Status.TLS == nil || vc.Status.TLS.Refused != "" {
			return false
		}
		got := pods()
		for name, was := range before {
			if got[name] == was || !strings.HasSuffix(got[name], " mounting keep-next") {
				return false
			}
		}
		return len(got) == len(before)
	})
}
