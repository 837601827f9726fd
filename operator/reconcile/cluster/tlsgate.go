package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;create;update;delete

// tlsPlan is how the pods are built for TLS this turn, and why where it is not as the spec asks.
type tlsPlan struct {
	// mode is the TLS mode the pods are built with.
	mode v1beta1.TLSMode
	// secret is the Secret the pods mount their certificate from.
	secret string
	// why says why the pods are not built as the spec asks ("" when they are).
	why string
	// fresh says no pod exists at all.
	fresh bool
}

// tlsGate decides the TLS mode and Secret the pods are built with this turn. The spec is
// followed, except:
//   - TLS is asked, no pod serves it, and the Secret the certificate comes from is missing or
//     refused (cert-manager has not issued it yet, a key is missing, it does not verify):
//     pods are built without TLS, so none rolls onto a certificate it cannot serve. fresh says
//     no pod exists at all: then nothing is created until the certificate is usable, so that a
//     new cluster starts with TLS rather than rolling onto it (a Cluster topology cannot roll
//     its bus onto TLS at all: nodes with and without tls-cluster do not gossip).
//   - TLSOnly is asked while the pods serve no TLS (the spec went on to TLSOnly while the
//     certificate was awaited): Both first, since a node that serves TLS only cannot follow,
//     nor be followed by, one that serves none; TLSOnly once every pod serves TLS.
//   - Pods serve TLS and spec.tls names a Secret the operator refuses, other than the one the
//     pod template mounts now: the template keeps mounting that one, so its revision does not
//     change and nothing rolls. Rolling would mount a Secret that failed readTLS's checks
//     (which keep spec.tls.secretRef from opening any Secret of the namespace to the pods'
//     image) and leave the pods with a certificate they cannot serve. Once the spec names a
//     Secret that passes, the pods roll onto it.
//
// Once a pod serves TLS the spec's mode is followed, with the last good configuration if the
// Secret turns bad: holding TLS back then would roll pods back to plain.
func (r *Reconciler) tlsGate(ctx context.Context, vc *v1beta1.ValkeyCluster, cert *v1beta1.CertificateRequestStatus) (tlsPlan, error) {
	g := tlsPlan{mode: vc.Spec.TLS.Mode, secret: v1beta1.TLSSecretName(vc)}
	if kube.TLSModeOf(vc) == "" {
		return g, nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(vc.Namespace), client.MatchingLabels(kube.SelectorLabels(vc))); err != nil {
		return g, err
	}
	byName := map[string]*corev1.Pod{}
	serving := false
	for i := range pods.Items {
		serving = serving || pods.Items[i].Annotations[kube.AnnotationTLS] != ""
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	_, _, refused := r.tlsRead(ctx, vc, byName)
	if serving {
		if refused == nil {
			return g, nil
		}
		mounted, err := r.templateTLSSecret(ctx, vc)
		if err != nil || mounted == "" || mounted == g.secret {
			// The Secret the pods mount turned bad: routeTLS says so, and the nodes serve what
			// they loaded.
			return g, err
		}
		g.secret = mounted
		g.why = fmt.Sprintf("%v; the pods keep Secret %s, which they mount now, until spec.tls names one the operator accepts", refused, mounted)
		return g, nil
	}
	g.fresh = len(byName) == 0
	if refused != nil {
		g.why = "TLS is not turned on until its certificate is usable: " + refused.Error()
		if cert != nil && cert.Ready != "True" {
			g.why += fmt.Sprintf(" (cert-manager Certificate %s: Ready %s", cert.Name, cert.Ready)
			if cert.Message != "" {
				g.why += ": " + cert.Message
			}
			g.why += ")"
		}
		g.mode = v1beta1.TLSDisabled
		return g, nil
	}
	if g.mode == v1beta1.TLSOnly && !g.fresh {
		g.mode = v1beta1.TLSPlainAndTLS
	}
	return g, nil
}

// templateTLSSecret is the Secret the cluster's pod template mounts now ("" without one): the
// first shard's StatefulSet that mounts one, in a Cluster topology (the machine keeps every
// shard at one revision).
func (r *Reconciler) templateTLSSecret(ctx context.Context, vc *v1beta1.ValkeyCluster) (string, error) {
	sets, err := r.statefulSets(ctx, vc, kube.NamesOf(vc))
	if err != nil {
		return "", err
	}
	shards := slices.Sorted(maps.Keys(sets))
	for _, s := range shards {
		if name := kube.MountedTLSSecret(&sets[s].Spec.Template.Spec); name != "" {
			return name, nil
		}
	}
	return "", nil
}

// certificateStatus reads the operator's cert-manager Certificate (nil without spec.tls.issuerRef):
// whether cert-manager says it is Ready, and why not.
func (r *Reconciler) certificateStatus(ctx context.Context, vc *v1beta1.ValkeyCluster) *v1beta1.CertificateRequestStatus {
	if vc.Spec.TLS.IssuerRef == nil {
		return nil
	}
	st := &v1beta1.CertificateRequestStatus{Name: v1beta1.IssuedSecretName(vc), Ready: "Unknown"}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kube.CertificateGVK)
	err := r.apiReader().Get(ctx, types.NamespacedName{Namespace: vc.Namespace, Name: st.Name}, u)
	switch {
	case meta.IsNoMatchError(err):
		st.Message = "cert-manager is not installed (the API server does not serve cert-manager.io/v1 Certificate)"
		return st
	case apierrors.IsNotFound(err):
		st.Message = "not created yet"
		return st
	case err != nil:
		st.Message = err.Error()
		return st
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			st.Ready, _ = m["status"].(string)
			st.Message, _ = m["message"].(string)
		}
	}
	return st
}
