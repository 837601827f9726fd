package v1beta1

import networkingv1 "k8s.io/api/networking/v1"

// NetworkPolicySpec asks for a NetworkPolicy that limits who reaches the cluster's pods.
type NetworkPolicySpec struct {
	// Enabled creates the NetworkPolicy <name>: ingress to the pods only from the cluster's
	// own pods (replication, the cluster bus: every port), from the operator and from the
	// peers in From (the Valkey ports). Off by default: it takes effect only where the
	// network plugin enforces NetworkPolicies.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// From are the clients allowed to connect to the Valkey ports (6379 and, with TLS,
	// 6380), as a NetworkPolicy's ingress peers: pods of this namespace by podSelector,
	// namespaces by namespaceSelector, both, or an ipBlock. Empty: only the cluster's pods
	// and the operator.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	From []networkingv1.NetworkPolicyPeer `json:"from,omitempty"`

	// Operator is where the operator runs, allowed to the Valkey ports. Default: pods
	// labelled app.kubernetes.io/name=valkey-operator in any namespace (the chart's labels).
	// +optional
	Operator *networkingv1.NetworkPolicyPeer `json:"operator,omitempty"`
}

// OperatorPodLabels are the labels the chart gives the operator's pods: the default peer the
// NetworkPolicy lets in.
var OperatorPodLabels = map[string]string{"app.kubernetes.io/name": "valkey-operator"}
