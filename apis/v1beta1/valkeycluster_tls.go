package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// TLSMode is how a cluster's nodes accept connections, named for the listeners they open.
// +kubebuilder:validation:Enum=Disabled;PlainAndTLS;TLSOnly
type TLSMode string

const (
	// TLSDisabled: plain TCP on port 6379 only.
	TLSDisabled TLSMode = "Disabled"
	// TLSPlainAndTLS: plain TCP on 6379 and TLS on 6380, for a migration: clients move to
	// TLS while the others still connect in plain. The operator and replication use TLS.
	// (v1alpha1's Both.)
	TLSPlainAndTLS TLSMode = "PlainAndTLS"
	// TLSOnly: TLS on 6380 only (port 0: nothing listens in plain).
	TLSOnly TLSMode = "TLSOnly"
)

// TLSPort is the port nodes serve TLS on (in PlainAndTLS and TLSOnly).
const TLSPort = 6380

// TLSSpec is how a cluster's nodes serve TLS. Turning TLS on or off goes through
// PlainAndTLS, each step a rolling restart with hand-over (docs/security.md).
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode == 'Disabled' || has(self.secretRef) || has(self.issuerRef)",message="tls.mode PlainAndTLS or TLSOnly needs tls.secretRef (a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt whose certificate names every pod: *.<name>-nodes.<namespace>.svc) or tls.issuerRef (a cert-manager Issuer or ClusterIssuer the operator asks for that certificate)"
// +kubebuilder:validation:XValidation:rule="!(has(self.secretRef) && has(self.issuerRef))",message="tls.secretRef and tls.issuerRef are exclusive: name your own Secret, or an issuer for the operator's Certificate (whose Secret is <name>-tls), not both"
// +kubebuilder:validation:XValidation:rule="has(self.issuerRef) || (!has(self.duration) && !has(self.renewBefore))",message="tls.duration and tls.renewBefore are the lifetime of the certificate an issuer issues: set tls.issuerRef, or remove them (a Secret you name is renewed by whoever writes it)"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.mode) || oldSelf.mode == 'Disabled' ? (!has(self.mode) || self.mode != 'TLSOnly') : true",message="tls.mode cannot go from Disabled to TLSOnly at once: nodes that are not restarted yet could not follow one that is (replication needs a port both speak); set PlainAndTLS first, move the clients to TLS, then TLSOnly"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.mode) && oldSelf.mode == 'TLSOnly' ? (has(self.mode) && self.mode != 'Disabled') : true",message="tls.mode cannot go from TLSOnly to Disabled at once: set PlainAndTLS first, move the clients to plain TCP, then Disabled"
type TLSSpec struct {
	// Mode is Disabled (the default), PlainAndTLS (plain on 6379 and TLS on 6380, while
	// clients migrate) or TLSOnly (TLS on 6380, nothing in plain).
	// +kubebuilder:default=Disabled
	// +optional
	Mode TLSMode `json:"mode,omitempty"`

	// SecretRef names a kubernetes.io/tls Secret in the cluster's namespace. Its keys are
	// fixed, as in every TLS Secret: tls.crt, tls.key and ca.crt (the CA that signed it,
	// with which the operator and replicas verify the nodes), so the reference has no key.
	// The certificate must name every pod (a wildcard *.<name>-nodes.<namespace>.svc does)
	// and the client Services clients use. Exclusive with issuerRef.
	// +optional
	SecretRef *SecretRef `json:"secretRef,omitempty"`

	// IssuerRef is a cert-manager Issuer or ClusterIssuer, named as cert-manager's own
	// Certificate names it: the operator creates the Certificate <name>-tls (Secret
	// <name>-tls) naming every pod and the cluster's Services, and cert-manager issues and
	// renews it. Exclusive with secretRef.
	// +optional
	IssuerRef *IssuerRef `json:"issuerRef,omitempty"`

	// Duration is the lifetime of the certificate issuerRef issues (cert-manager's default,
	// 90 days, when unset); only with issuerRef.
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// RenewBefore is how long before expiry cert-manager renews it (its default when unset:
	// a third of the duration); only with issuerRef.
	// +optional
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`

	// ClientCertificates requires every client to present a certificate signed by the CA
	// (tls-auth-clients yes). The operator and the nodes' replication present the node
	// certificate, which must then allow client authentication too.
	// +optional
	ClientCertificates bool `json:"clientCertificates,omitempty"`
}

// IssuerRef names the cert-manager issuer of the nodes' certificate, with the fields and
// defaults of cert-manager's own issuerRef.
type IssuerRef struct {
	// Name of the Issuer (in the cluster's namespace) or ClusterIssuer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Kind is Issuer (the default) or ClusterIssuer.
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +kubebuilder:default=Issuer
	// +optional
	Kind string `json:"kind,omitempty"`
	// Group is the issuer's API group (cert-manager.io; another for external issuers).
	// +kubebuilder:default=cert-manager.io
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group,omitempty"`
}

// TLSSecretName is the Secret the nodes' certificate comes from: spec.tls.secretRef's, or the
// operator's Certificate's <name>-tls when an issuer issues it ("" when neither is set).
func TLSSecretName(vc *ValkeyCluster) string {
	if vc.Spec.TLS.IssuerRef != nil {
		return IssuedSecretName(vc)
	}
	if r := vc.Spec.TLS.SecretRef; r != nil {
		return r.Name
	}
	return ""
}

// IssuedSecretName is the name of the operator's Certificate and of its Secret.
func IssuedSecretName(vc *ValkeyCluster) string { return vc.Name + "-tls" }

// TLSStatus is what the operator saw of the cluster's certificates.
type TLSStatus struct {
	// Secret is the certificate in spec.tls's Secret.
	// +optional
	Secret *CertificateInfo `json:"secret,omitempty"`
	// Certificate is the operator's cert-manager Certificate (with spec.tls.issuer) and
	// whether cert-manager says it is Ready.
	// +optional
	Certificate *CertificateRequestStatus `json:"certificate,omitempty"`
	// Refused says why the Secret's certificate is not used (it does not verify against its
	// CA now, a key is missing); the nodes keep what they serve.
	// +optional
	Refused string `json:"refused,omitempty"`
	// Nodes is the certificate each pod that serves TLS presented (list map keyed by pod).
	// +listType=map
	// +listMapKey=pod
	// +optional
	Nodes []NodeCertificate `json:"nodes,omitempty"`
}

// CertificateRequestStatus is the state of the operator's cert-manager Certificate.
type CertificateRequestStatus struct {
	Name string `json:"name"`
	// Ready is cert-manager's Ready condition (True, False, or Unknown before it has one).
	Ready string `json:"ready"`
	// Message is the Ready condition's message (why it is not ready).
	// +optional
	Message string `json:"message,omitempty"`
}

// NodeCertificate is the certificate one pod serves.
type NodeCertificate struct {
	Pod string `json:"pod"`
	// +optional
	CertificateInfo `json:",inline"`
	// MatchesSecret is true when it is the Secret's certificate (same serial and issuer).
	// +optional
	MatchesSecret bool `json:"matchesSecret,omitempty"`
	// Error is why the pod's certificate could not be read (a failed handshake).
	// +optional
	Error string `json:"error,omitempty"`
}

// CertificateInfo describes a certificate.
type CertificateInfo struct {
	// +optional
	Subject string `json:"subject,omitempty"`
	// +optional
	Issuer string `json:"issuer,omitempty"`
	// Serial is the serial number in hexadecimal.
	// +optional
	Serial string `json:"serial,omitempty"`
	// +optional
	DNSNames []string `json:"dnsNames,omitempty"`
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
}
