package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// TLSMode is how a cluster's nodes accept connections.
// +kubebuilder:validation:Enum=Disabled;Both;TLSOnly
type TLSMode string

const (
	// TLSDisabled: plain TCP on port 6379 only.
	TLSDisabled TLSMode = "Disabled"
	// TLSBoth: plain TCP on 6379 and TLS on 6380, for a migration: clients move to TLS while
	// the others still connect in plain. The operator and replication use TLS.
	TLSBoth TLSMode = "Both"
	// TLSOnly: TLS on 6380 only (port 0: nothing listens in plain).
	TLSOnly TLSMode = "TLSOnly"
)

// TLSPort is the port nodes serve TLS on (in Both and TLSOnly).
const TLSPort = 6380

// TLSSpec is how a cluster's nodes serve TLS. Turning TLS on or off goes through Both, each
// step a rolling restart with hand-over (docs/security.md).
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode == 'Disabled' || has(self.secretName) || has(self.issuer)",message="tls.mode Both or TLSOnly needs tls.secretName (a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt whose certificate names every pod: *.<name>-nodes.<namespace>.svc) or tls.issuer (a cert-manager Issuer or ClusterIssuer the operator asks for that certificate)"
// +kubebuilder:validation:XValidation:rule="!(has(self.secretName) && has(self.issuer))",message="tls.secretName and tls.issuer are exclusive: name your own Secret, or an issuer for the operator's Certificate (whose Secret is <name>-tls), not both"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.mode) || oldSelf.mode == 'Disabled' ? (!has(self.mode) || self.mode != 'TLSOnly') : true",message="tls.mode cannot go from Disabled to TLSOnly at once: nodes that are not restarted yet could not follow one that is (replication needs a port both speak); set Both first, move the clients to TLS, then TLSOnly"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.mode) && oldSelf.mode == 'TLSOnly' ? (has(self.mode) && self.mode != 'Disabled') : true",message="tls.mode cannot go from TLSOnly to Disabled at once: set Both first, move the clients to plain TCP, then Disabled"
type TLSSpec struct {
	// Mode is Disabled (the default), Both (plain on 6379 and TLS on 6380, while clients
	// migrate) or TLSOnly (TLS on 6380, nothing in plain).
	// +kubebuilder:default=Disabled
	// +optional
	Mode TLSMode `json:"mode,omitempty"`

	// SecretName names a kubernetes.io/tls Secret in the cluster's namespace with tls.crt,
	// tls.key and ca.crt (the CA that signed it, with which the operator and replicas verify
	// the nodes). The certificate must name every pod (a wildcard
	// *.<name>-nodes.<namespace>.svc does) and the client Services clients use.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// Issuer is a cert-manager Issuer or ClusterIssuer: the operator creates the Certificate
	// <name>-tls (Secret <name>-tls) naming every pod and the cluster's Services, and
	// cert-manager issues and renews it. Exclusive with SecretName.
	// +optional
	Issuer *TLSIssuer `json:"issuer,omitempty"`

	// ClientCertificates requires every client to present a certificate signed by the CA
	// (tls-auth-clients yes). The operator and the nodes' replication present the node
	// certificate, which must then allow client authentication too.
	// +optional
	ClientCertificates bool `json:"clientCertificates,omitempty"`
}

// TLSIssuer names the cert-manager issuer of the nodes' certificate.
type TLSIssuer struct {
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
	// Duration is the certificate's lifetime (cert-manager's default, 90 days, when unset).
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// RenewBefore is how long before expiry cert-manager renews it (its default when unset:
	// a third of the duration).
	// +optional
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
}

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
