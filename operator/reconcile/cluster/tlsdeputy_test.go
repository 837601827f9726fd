package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/internal/testcert"
)

// The confused deputy: whoever may create a ValkeyCluster chooses its image, and the image reads
// what the pods mount, so spec.tls.secretRef must not open another Secret of the namespace.
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
	for _, topo := range []v1beta1.Topology{v1beta1.TopologyReplication, v1beta1.TopologyCluster} {
		for name, want := range map[string]string{
			"opaque":          "",
			"payments-tls":    "the certificate does not name the cluster's pods",
			"payments-opaque": "the certificate does not name the cluster's pods",
			"c-tls":           "",
		} {
			vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c", UID: types.UID("u-" + string(topo) + "-" + name)},
				Spec: v1beta1.ValkeyClusterSpec{Topology: topo, TLS: v1beta1.TLSSpec{Mode: v1beta1.TLSPlainAndTLS, SecretRef: &v1beta1.SecretRef{Name: name}}}}
			g, err := r.tlsGate(ctx, vc, nil)
			if err != nil {
				t.Fatal(err)
			}
			mode, why, fresh := g.mode, g.why, g.fresh
			if want == "" {
				if mode != v1beta1.TLSPlainAndTLS || why != "" {
					t.Errorf("%s, Secret %s made for the cluster: mode %s, refused %q", topo, name, mode, why)
				}
				continue
			}
			// fresh and a reason: the reconciler creates no StatefulSet (reconciler.look), so no
			// pod mounts the Secret.
			if mode != v1beta1.TLSDisabled || !fresh || !strings.Contains(why, want) {
				t.Errorf("%s, Secret %s: mode %s, fresh %v, refused %q; want it refused with %q before any pod", topo, name, mode, fresh, why, want)
			}
		}
	}
}

// A running cluster whose spec.tls.secretRef moves to a Secret the operator refuses keeps
// the Secret its pod template mounts: the template, so its revision, does not change (nothing
// rolls), and the reason says both the refusal and what is kept. An operator that starts then
// (no last good configuration in memory) reaches the nodes with the Secret the pods mount.
// Once the spec names a Secret made for the cluster, the template mounts it: a new revision,
// rolled as any other.
func TestARunningClusterKeepsItsTLSSecretWhileTheSpecNamesARefusedOne(t *testing.T) {
	c := apiClient(t)
	ctx := context.Background()
	now := time.Now()
	ca, err := testcert.NewCA("ca")
	if err != nil {
		t.Fatal(err)
	}
	for _, topo := range []v1beta1.Topology{v1beta1.TopologyReplication, v1beta1.TopologyCluster} {
		ns := newNamespace(t, c, "keep-")
		forCluster, _ := ca.Issue(40, []string{"*.c-nodes." + ns.Name + ".svc"}, nil, now.Add(-time.Hour), 24*time.Hour)
		renewed, _ := ca.Issue(41, []string{"*.c-nodes." + ns.Name + ".svc"}, nil, now.Add(-time.Hour), 24*time.Hour)
		forAnApp, _ := ca.Issue(42, []string{"payments." + ns.Name + ".svc"}, nil, now.Add(-time.Hour), 24*time.Hour)
		for name, pair := range map[string]testcert.Pair{"c-tls": forCluster, "c-next": renewed, "payments-tls": forAnApp} {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{"tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM, "ca.crt": ca.PEM}}
			if err := c.Create(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c", UID: types.UID("keep-" + string(topo))},
			Spec: v1beta1.ValkeyClusterSpec{Topology: topo, TLS: v1beta1.TLSSpec{Mode: v1beta1.TLSOnly, SecretRef: &v1beta1.SecretRef{Name: "c-tls"}}}}
		v1beta1.SetDefaults(&vc.Spec)
		owner := metav1.OwnerReference{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ValkeyCluster", Name: "c", UID: vc.UID, Controller: ptr.To(true)}
		running := kube.Build(vc, owner)
		sts := running.ShardSet(0)
		if err := c.Create(ctx, sts); err != nil {
			t.Fatal(err)
		}
		// The StatefulSet's pod, as its controller would make it (the claim as a volume).
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: sts.Name + "-0", Labels: sts.Spec.Template.Labels, Annotations: sts.Spec.Template.Annotations},
			Spec: *sts.Spec.Template.Spec.DeepCopy()}
		for _, claim := range sts.Spec.VolumeClaimTemplates {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: claim.Name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}

		vc.Spec.TLS.SecretRef = &v1beta1.SecretRef{Name: "payments-tls"}
		r := &Reconciler{Client: c, APIReader: c, Now: func() time.Time { return now }}
		g, err := r.tlsGate(ctx, vc, nil)
		if err != nil {
			t.Fatal(err)
		}
		if g.secret != "c-tls" || g.mode != v1beta1.TLSOnly || g.fresh ||
			!strings.Contains(g.why, "TLS Secret payments-tls: the certificate does not name the cluster's pods") || !strings.Contains(g.why, "the pods keep Secret c-tls") {
			t.Fatalf("%s, spec moved to a refused Secret: %+v; want the pods kept on c-tls, and why", topo, g)
		}
		if got := kube.BuildMounting(vc, owner, g.secret).Revision; got != running.Revision {
			t.Errorf("%s, spec moved to a refused Secret: revision %s, the pods run %s: they would roll onto it", topo, got, running.Revision)
		}
		cfg, err := r.tlsConfig(ctx, vc, map[string]*corev1.Pod{pod.Name: pod})
		if err == nil || cfg == nil || cfg.RootCAs == nil {
			t.Errorf("%s, a new operator, spec naming a refused Secret: want the refusal and the mounted Secret's configuration, got %v, %v", topo, cfg, err)
		}

		vc.Spec.TLS.SecretRef = &v1beta1.SecretRef{Name: "c-next"}
		if g, err = r.tlsGate(ctx, vc, nil); err != nil || g.secret != "c-next" || g.why != "" {
			t.Fatalf("%s, spec moved on to a Secret made for the cluster: %+v, %v", topo, g, err)
		}
		if kube.BuildMounting(vc, owner, g.secret).Revision == running.Revision {
			t.Errorf("%s, spec moved on to a Secret made for the cluster: the revision did not change, nothing rolls onto it", topo)
		}
	}
}
