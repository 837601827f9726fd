package kube

import (
	"maps"
	"slices"
	"strings"

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
			svc.Annotations[AnnotationServiceAnnotations] = strings.Join(slices.Sorted(maps.Keys(s.Annotations)), ",")
		}
	}
}

// AnnotationServiceAnnotations on a client Service lists the keys of the annotations the
// operator set there from spec.service.annotations (comma-separated: an annotation key holds
// no comma). A cloud's controllers annotate the Services too, so an annotation the Service
// has and the spec has not is theirs, unless listed here: then the user removed it from the
// spec, and the operator removes it from the Service.
const AnnotationServiceAnnotations = "valkey.fsm.dev/service-annotations"

// setByOperator is the annotation keys svc lists as set from the spec.
func setByOperator(svc *corev1.Service) []string {
	v := svc.Annotations[AnnotationServiceAnnotations]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// annotationsAsSpec reports whether cur carries want's annotations, and none that the
// operator set from the spec and the spec no longer has.
func annotationsAsSpec(want, cur *corev1.Service) bool {
	if !annotationsSet(want.Annotations, cur.Annotations) {
		return false
	}
	for _, k := range setByOperator(cur) {
		if _, ok := want.Annotations[k]; !ok {
			return false
		}
	}
	_, listed := cur.Annotations[AnnotationServiceAnnotations]
	_, wanted := want.Annotations[AnnotationServiceAnnotations]
	return !listed || wanted
}

// mergeAnnotations brings cur's annotations to want's: those the operator set from the spec
// and the spec dropped are removed, the spec's set; the others' are kept.
func mergeAnnotations(want, cur *corev1.Service) {
	a := maps.Clone(cur.Annotations)
	if a == nil {
		a = map[string]string{}
	}
	for _, k := range setByOperator(cur) {
		delete(a, k)
	}
	delete(a, AnnotationServiceAnnotations)
	maps.Copy(a, want.Annotations)
	if len(a) == 0 {
		a = nil
	}
	cur.Annotations = a
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
