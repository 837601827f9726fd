package kube

import (
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// withServiceSpec gives the client Services (not the headless one, which peers and the
// operator dial pod by pod and which stays ClusterIP None) spec.service's type and
// annotations. Unset, it leaves them as every release before it rendered them.
func withServiceSpec(vc *v1beta1.ValkeyCluster, client ...*corev1.Service) {
	s := vc.Spec.Service
	if s == nil {
		return
	}
	for _, svc := range client {
		svc.Spec.Type = s.Type
		if len(s.Annotations) > 0 {
			svc.Annotations = maps.Clone(s.Annotations)
		}
	}
}

// serviceType is t with the API server's default for an empty one.
func serviceType(t corev1.ServiceType) corev1.ServiceType {
	if t == "" {
		return corev1.ServiceTypeClusterIP
	}
	return t
}

// hasNodePorts tells whether a Service of type t is given node ports.
func hasNodePorts(t corev1.ServiceType) bool {
	return t == corev1.ServiceTypeNodePort || t == corev1.ServiceTypeLoadBalancer
}

// keepNodePorts gives each port of want that cur already exposes (same name) cur's node port,
// when both types have node ports: a Service repaired for another reason (a new annotation, a
// TLS port) keeps the node ports clients outside the cluster were given. Kubernetes allocates
// the others, and drops them all when the type no longer has any.
func keepNodePorts(want []corev1.ServicePort, cur *corev1.Service, wantType corev1.ServiceType) []corev1.ServicePort {
	if !hasNodePorts(wantType) || !hasNodePorts(serviceType(cur.Spec.Type)) {
		return want
	}
	out := make([]corev1.ServicePort, len(want))
	copy(out, want)
	for i := range out {
		for _, p := range cur.Spec.Ports {
			if p.Name == out[i].Name && out[i].NodePort == 0 {
				out[i].NodePort = p.NodePort
			}
		}
	}
	return out
}

// annotationsSet reports whether cur carries every annotation of want.
func annotationsSet(want, cur map[string]string) bool {
	for k, v := range want {
		if got, ok := cur[k]; !ok || got != v {
			return false
		}
	}
	return true
}
