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

// tlsGate is why TLS cannot be turned on yet ("" when it can, or is on already): the spec asks
// for it, no pod serves it, and the Secret the certificate comes from is missing or refused
// (cert-manager has not issued it yet, a key is missing, it does not verify). Until then the
// pods are built without TLS, so no pod rolls onto a certificate it cannot serve; once a pod
// serves TLS the spec is followed, with the last good configuration if the Secret turns bad.
func (r *Reconciler) tlsGate(ctx context.Context, vc *v1alpha1.ValkeyCluster, cert *v1alpha1.CertificateRequestStatus) (string, error) {
	if kube.TLSModeOf(vc) == "" {
		return "", nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(vc.Namespace), client.MatchingLabels(kube.SelectorLabels(vc))); err != nil {
		return "", err
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		if pods.Items[i].Annotations[kube.AnnotationTLS] != "" {
			return "", nil
		}
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	_, _, err := r.tlsRead(ctx, vc, byName)
	if err == nil {
		return "", nil
	}
	why := "TLS is not turned on until its certificate is usable: " + err.Error()
	if cert != nil && cert.Ready != "True" {
		why += fmt.Sprintf(" (cert-manager Certificate %s: Ready %s", cert.Name, cert.Ready)
		if cert.Message != "" {
			why += ": " + cert.Message
		}
		why += ")"
	}
	return why, nil
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
