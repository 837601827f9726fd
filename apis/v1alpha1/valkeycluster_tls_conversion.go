package v1alpha1

import (
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TLS modes are renamed for the listeners they open; any other value (none is valid) is
// carried as it is.
var tlsModeNames = map[TLSMode]v1beta1.TLSMode{
	TLSDisabled: v1beta1.TLSDisabled,
	TLSBoth:     v1beta1.TLSPlainAndTLS,
	TLSOnly:     v1beta1.TLSOnly,
}

func tlsModeToHub(m TLSMode) v1beta1.TLSMode {
	if to, ok := tlsModeNames[m]; ok {
		return to
	}
	return v1beta1.TLSMode(m)
}

func tlsModeFromHub(m v1beta1.TLSMode) TLSMode {
	for from, to := range tlsModeNames {
		if to == m {
			return from
		}
	}
	return TLSMode(m)
}

// tlsSpecToHub: secretName becomes secretRef, and the issuer splits into cert-manager's
// issuerRef and the certificate's duration and renewBefore beside it.
func tlsSpecToHub(in TLSSpec) v1beta1.TLSSpec {
	out := v1beta1.TLSSpec{Mode: tlsModeToHub(in.Mode), ClientCertificates: in.ClientCertificates}
	if in.SecretName != "" {
		out.SecretRef = &v1beta1.SecretRef{Name: in.SecretName}
	}
	if in.Issuer != nil {
		out.IssuerRef = &v1beta1.IssuerRef{Name: in.Issuer.Name, Kind: in.Issuer.Kind, Group: in.Issuer.Group}
		out.Duration, out.RenewBefore = in.Issuer.Duration, in.Issuer.RenewBefore
	}
	return out
}

// tlsSpecFromHub is tlsSpecToHub's inverse. A duration or renewBefore without an issuerRef
// (which CEL refuses) has no place in v1alpha1; the caller keeps it in the annotation.
func tlsSpecFromHub(in v1beta1.TLSSpec) TLSSpec {
	out := TLSSpec{Mode: tlsModeFromHub(in.Mode), ClientCertificates: in.ClientCertificates}
	if in.SecretRef != nil {
		out.SecretName = in.SecretRef.Name
	}
	if in.IssuerRef != nil {
		out.Issuer = &TLSIssuer{
			Name: in.IssuerRef.Name, Kind: in.IssuerRef.Kind, Group: in.IssuerRef.Group,
			Duration: in.Duration, RenewBefore: in.RenewBefore,
		}
	}
	return out
}

func tlsStatusToHub(in *TLSStatus) *v1beta1.TLSStatus {
	if in == nil {
		return nil
	}
	out := &v1beta1.TLSStatus{
		Secret:      (*v1beta1.CertificateInfo)(in.Secret),
		Certificate: (*v1beta1.CertificateRequestStatus)(in.Certificate),
		Refused:     in.Refused,
	}
	out.Nodes = convertSlice(in.Nodes, func(n NodeCertificate) v1beta1.NodeCertificate {
		return v1beta1.NodeCertificate{Pod: n.Pod, CertificateInfo: v1beta1.CertificateInfo(n.CertificateInfo), MatchesSecret: n.MatchesSecret, Error: n.Error}
	})
	return out
}

func tlsStatusFromHub(in *v1beta1.TLSStatus) *TLSStatus {
	if in == nil {
		return nil
	}
	out := &TLSStatus{
		Secret:      (*CertificateInfo)(in.Secret),
		Certificate: (*CertificateRequestStatus)(in.Certificate),
		Refused:     in.Refused,
	}
	out.Nodes = convertSlice(in.Nodes, func(n v1beta1.NodeCertificate) NodeCertificate {
		return NodeCertificate{Pod: n.Pod, CertificateInfo: CertificateInfo(n.CertificateInfo), MatchesSecret: n.MatchesSecret, Error: n.Error}
	})
	return out
}
