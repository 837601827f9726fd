package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/internal/testcert"
)

// The confused deputy: whoever may create a ValkeyCluster chooses its image, and the image reads
// what the pods mount, so spec.tls.secretName must not open another Secret of the namespace.
// A Secret whose certificate was made for something else (it does not name the cluster's pods)
// is refused with a reason that says what to change, and a new cluster then creates no pod, so
// nothing mounts it. A Secret made for the cluster is taken, also one of type Opaque (a running
// cluster's, from before the check: refusing it would blind the operator to its nodes).
func TestATLSSecretNotMadeForTheClusterIsNotMounted(t *testing.T) {
	c := apiClient(t)
	ctx := context.Background()
	ns := newNamespace(t, c, "deputy-")
	now := time.Now()
	r := &Reconciler{Client: c, APIReader: c, Now: func() time.Time { return now }}
	ca, err := testcert.NewCA("ca")
	if err != nil {
		t.Fatal(err)
	}
	forCluster, _ := ca.Issue(30, []string{"*.c-nodes." + ns.Name + ".svc", "c." + ns.Name + ".svc"}, nil, now.Add(-time.Hour), 24*time.Hour)
	forAnApp, _ := ca.Issue(31, []string{"payments." + ns.Name + ".svc", "*." + ns.Name + ".svc"}, nil, now.Add(-time.Hour), 24*time.Hour)
	secret := func(name string, typ corev1.SecretType, pair testcert.Pair) {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name}, Type: typ,
			Data: map[string][]byte{"tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM, "ca.crt": ca.PEM}}
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	secret("opaque", corev1.SecretTypeOpaque, forCluster)
	secret("payments-tls", corev1.SecretTypeTLS, forAnApp)
	secret("payments-opaque", corev1.SecretTypeOpaque, forAnApp)
	secret("c-tls", corev1.SecretTypeTLS, forCluster)
	for _, topo := range []v1alpha1.Topology{v1alpha1.TopologyReplication, v1alpha1.TopologyCluster} {
		for name, want := range map[string]string{
			"opaque":          "",
			"payments-tls":    "the certificate does not name the cluster's pods",
			"payments-opaque": "the certificate does not name the cluster's pods",
			"c-tls":           "",
		} {
			vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c", UID: types.UID("u-" + string(topo) + "-" + name)},
				Spec: v1alpha1.ValkeyClusterSpec{Topology: topo, TLS: v1alpha1.TLSSpec{Mode: v1alpha1.TLSBoth, SecretName: name}}}
			mode, why, fresh, err := r.tlsMode(ctx, vc, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want == "" {
				if mode != v1alpha1.TLSBoth || why != "" {
					t.Errorf("%s, Secret %s made for the cluster: mode %s, refused %q", topo, name, mode, why)
				}
				continue
			}
			// fresh and a reason: the reconciler creates no StatefulSet (reconciler.look), so no
			// pod mounts the Secret.
			if mode != v1alpha1.TLSDisabled || !fresh || !strings.Contains(why, want) {
				t.Errorf("%s, Secret %s: mode %s, fresh %v, refused %q; want it refused with %q before any pod", topo, name, mode, fresh, why, want)
			}
		}
	}
}
