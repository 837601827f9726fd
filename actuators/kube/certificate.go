package kube

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// CertificateGVK is cert-manager's Certificate. The operator writes it as an unstructured
// object: cert-manager's Go module pulls its own Kubernetes libraries, and the few fields
// needed here do not justify that; an API server without cert-manager's CRDs refuses the
// kind, which the operator reports in status.
var CertificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

// certificate is the Certificate spec.tls.issuerRef asks for (nil without an issuer). It names
// every pod through the headless Service's wildcard, present and future: a replica added by a
// scale-up serves a name the operator verifies from its first second, with no re-issue to
// wait for; and the Services clients use, short and fully qualified. The usages allow client
// authentication too: with clientCertificates the nodes present it to each other and the
// operator presents it to them.
func certificate(vc *v1beta1.ValkeyCluster, names Names, meta metav1.ObjectMeta) *unstructured.Unstructured {
	is := vc.Spec.TLS.IssuerRef
	if is == nil {
		return nil
	}
	ns := vc.Namespace
	var dns []any
	for _, svc := range []string{names.Client, names.Replicas, names.Headless} {
		dns = append(dns, svc, svc+"."+ns, svc+"."+ns+".svc", svc+"."+ns+".svc.cluster.local")
	}
	dns = append(dns, "*."+names.Headless+"."+ns+".svc", "*."+names.Headless+"."+ns+".svc.cluster.local")
	kind, group := is.Kind, is.Group
	if kind == "" {
		kind = "Issuer"
	}
	if group == "" {
		group = CertificateGVK.Group
	}
	spec := map[string]any{
		"secretName": names.Certificate,
		"dnsNames":   dns,
		"usages":     []any{"server auth", "client auth", "digital signature", "key encipherment"},
		"issuerRef":  map[string]any{"name": is.Name, "kind": kind, "group": group},
		// A new key with each certificate: a leaked key dies with its certificate.
		"privateKey": map[string]any{"rotationPolicy": "Always", "algorithm": "ECDSA", "size": int64(256)},
	}
	if d := vc.Spec.TLS.Duration; d != nil {
		spec["duration"] = d.Duration.String()
	}
	if d := vc.Spec.TLS.RenewBefore; d != nil {
		spec["renewBefore"] = d.Duration.String()
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(CertificateGVK)
	u.SetName(meta.Name)
	u.SetNamespace(meta.Namespace)
	u.SetLabels(meta.Labels)
	u.SetOwnerReferences(meta.OwnerReferences)
	return u
}
