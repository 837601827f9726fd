package v1beta1

import corev1 "k8s.io/api/core/v1"

// ServiceSpec shapes the client Services of a cluster.
type ServiceSpec struct {
	// Type is the Services' type: ClusterIP (the default: reachable inside the Kubernetes
	// cluster), NodePort or LoadBalancer (reachable from outside it: pair it with auth, TLS
	// and a networkPolicy or the load balancer's source ranges).
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +kubebuilder:default=ClusterIP
	// +optional
	Type corev1.ServiceType `json:"type,omitempty"`

	// Annotations are added to the Services' annotations, for what a cloud's load balancer
	// or DNS controller reads there (internal load balancer, DNS name). One dropped from this
	// list is removed from the Services; those the controllers write there are left alone.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}
