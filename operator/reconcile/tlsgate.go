package reconcile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;create;update;delete

// tlsMode is the TLS mode the pods are built with this turn, and why it is not the spec's
// ("" when it is). The spec is followed, except:
//   - TLS is asked, no pod serves it, and the Secret the certificate comes from is missing or
//     refused (cert-manager has not issued it yet, a key is missing, it does not verify):
//     pods are built without TLS, so none rolls onto a certificate it cannot serve. fresh says
//     no pod exists at all: then nothing is created until the certificate is usable, so that a
//     new cluster starts with TLS rather than rolling onto it (a Cluster topology cannot roll
//     its bus onto TLS at all: nodes with and without tls-cluster do not gossip).
//   - TLSOnly is asked while the pods serve no TLS (the spec went on to TLSOnly while the
//     certificate was awaited): Both first, since a node that serves TLS only cannot follow,
//     nor be followed by, one that serves none; TLSOnly once every pod serves TLS.
//
// Once a pod serves TLS the spec is followed, with the last good configuration if the Secret
// turns bad: holding TLS back then would roll pods back to plain.
func (r *Reconciler) tlsMode(ctx context.Context, vc *v1alpha1.ValkeyCluster, cert *v1alpha1.CertificateRequestStatus) (mode v1alpha1.TLSMode, why string, fresh bool, err error) {
	mode = vc.Spec.TLS.Mode
	if kube.TLSModeOf(vc) == "" {
		return mode, "", false, nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(vc.Namespace), client.MatchingLabels(kube.SelectorLabels(vc))); err != nil {
		return mode, "", false, err
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		if pods.Items[i].Annotations[kube.AnnotationTLS] != "" {
			return mode, "", false, nil
		}
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	fresh = len(byName) == 0
	if _, _, err := r.tlsRead(ctx, vc, byName); err != nil {
		why = "TLS is not turned on until its certificate is usable: " + err.Error()
		if cert != nil && cert.Ready != "True" {
			why += fmt.Sprintf(" (cert-manager Certificate %s: Ready %s", cert.Name, cert.Ready)
			if cert.Message != "" {
				why += ": " + cert.Message
			}
			why += ")"
		}
		return v1alpha1.TLSDisabled, why, fresh, nil
	}
	if mode == v1alpha1.TLSOnly && !fresh {
		return v1alpha1.TLSBoth, "", false, nil
	}
	return mode, "", fresh, nil
}

// certificateStatus reads the operator's cert-manager Certificate (nil without spec.tls.issuer):
// whether cert-manager says it is Ready, and why not.
func (r *Reconciler) certificateStatus(ctx context.Context, vc *v1alpha1.ValkeyCluster) *v1alpha1.CertificateRequestStatus {
	if vc.Spec.TLS.Issuer == nil {
		return nil
	}
	st := &v1alpha1.CertificateRequestStatus{Name: v1alpha1.IssuedSecretName(vc), Ready: "Unknown"}
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
