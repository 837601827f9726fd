package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// runningService is a client Service as the API server holds it: a cluster IP and, for a
// NodePort type, the node ports it allocated; a cloud's controller annotated it too.
func runningService(t corev1.ServiceType) *corev1.Service {
	s := &corev1.Service{Spec: corev1.ServiceSpec{Type: t, ClusterIP: "10.96.0.7", ClusterIPs: []string{"10.96.0.7"},
		Selector: map[string]string{"app.kubernetes.io/name": "valkey"},
		Ports:    []corev1.ServicePort{{Name: "valkey", Port: 6379, TargetPort: intstr.FromString("valkey"), Protocol: corev1.ProtocolTCP}}}}
	s.Annotations = map[string]string{"cloud.example/id": "lb-1"}
	if hasNodePorts(t) {
		s.Spec.Ports[0].NodePort = 30007
	}
	return s
}

func wantService(set func(*v1beta1.ValkeyClusterSpec)) *corev1.Service {
	s := &corev1.Service{Spec: corev1.ServiceSpec{Selector: map[string]string{"app.kubernetes.io/name": "valkey"},
		Ports: []corev1.ServicePort{{Name: "valkey", Port: 6379, TargetPort: intstr.FromString("valkey")}}}}
	vc := &v1beta1.ValkeyCluster{}
	set(&vc.Spec)
	withServiceSpec(vc, s)
	return s
}

// A Service of another type is repaired in place, keeping its cluster IP; one repaired for a
// new annotation keeps its node ports and the annotations others wrote.
func TestClientServiceRepairKeepsWhatKubernetesAllocated(t *testing.T) {
	unset := serviceStep(wantService(func(*v1beta1.ValkeyClusterSpec) {}))
	if !unset.same(runningService(corev1.ServiceTypeClusterIP)) {
		t.Error("spec.service unset: a ClusterIP Service counts as drifted")
	}

	nodePort := serviceStep(wantService(func(s *v1beta1.ValkeyClusterSpec) {
		s.Service = &v1beta1.ServiceSpec{Type: corev1.ServiceTypeNodePort}
	}))
	cur := runningService(corev1.ServiceTypeClusterIP)
	if nodePort.same(cur) {
		t.Fatal("a ClusterIP Service counts as a NodePort one")
	}
	nodePort.merge(cur)
	if cur.Spec.Type != corev1.ServiceTypeNodePort || cur.Spec.ClusterIP != "10.96.0.7" || cur.Spec.Ports[0].NodePort != 0 {
		t.Errorf("switched to NodePort: type %q, clusterIP %q, nodePort %d (0: Kubernetes allocates it)", cur.Spec.Type, cur.Spec.ClusterIP, cur.Spec.Ports[0].NodePort)
	}

	annotated := serviceStep(wantService(func(s *v1beta1.ValkeyClusterSpec) {
		s.Service = &v1beta1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Annotations: map[string]string{"dns.example/name": "cache"}}
	}))
	cur = runningService(corev1.ServiceTypeNodePort)
	if annotated.same(cur) {
		t.Fatal("a Service without the spec's annotation counts as repaired")
	}
	annotated.merge(cur)
	if cur.Spec.Ports[0].NodePort != 30007 || cur.Annotations["dns.example/name"] != "cache" || cur.Annotations["cloud.example/id"] != "lb-1" {
		t.Errorf("repaired for an annotation: nodePort %d (want 30007 kept), annotations %v", cur.Spec.Ports[0].NodePort, cur.Annotations)
	}
	if !annotated.same(cur) {
		t.Error("a repaired Service still counts as drifted: the operator would write it every turn")
	}

	back := serviceStep(wantService(func(s *v1beta1.ValkeyClusterSpec) {
		s.Service = &v1beta1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}
	}))
	cur = runningService(corev1.ServiceTypeNodePort)
	back.merge(cur)
	if cur.Spec.Type != corev1.ServiceTypeClusterIP || cur.Spec.Ports[0].NodePort != 0 || cur.Spec.ClusterIP != "10.96.0.7" {
		t.Errorf("switched back to ClusterIP: type %q, nodePort %d, clusterIP %q", cur.Spec.Type, cur.Spec.Ports[0].NodePort, cur.Spec.ClusterIP)
	}
}

// An annotation dropped from spec.service.annotations leaves the Services; those a cloud's
// controller wrote stay.
func TestADroppedServiceAnnotationLeavesTheServices(t *testing.T) {
	annotated := wantService(func(s *v1beta1.ValkeyClusterSpec) {
		s.Service = &v1beta1.ServiceSpec{Annotations: map[string]string{"dns.example/name": "cache", "lb.example/internal": "true"}}
	})
	cur := runningService(corev1.ServiceTypeClusterIP)
	serviceStep(annotated).merge(cur)

	fewer := serviceStep(wantService(func(s *v1beta1.ValkeyClusterSpec) {
		s.Service = &v1beta1.ServiceSpec{Annotations: map[string]string{"dns.example/name": "cache"}}
	}))
	if fewer.same(cur) {
		t.Fatal("a Service with an annotation the spec dropped counts as repaired")
	}
	fewer.merge(cur)
	if _, ok := cur.Annotations["lb.example/internal"]; ok || cur.Annotations["dns.example/name"] != "cache" || cur.Annotations["cloud.example/id"] != "lb-1" {
		t.Errorf("one annotation dropped from the spec: %v", cur.Annotations)
	}
	if !fewer.same(cur) {
		t.Error("a repaired Service still counts as drifted")
	}

	none := serviceStep(wantService(func(s *v1beta1.ValkeyClusterSpec) {}))
	if none.same(cur) {
		t.Fatal("a Service with annotations from a spec that has none counts as repaired")
	}
	none.merge(cur)
	if len(cur.Annotations) != 1 || cur.Annotations["cloud.example/id"] != "lb-1" {
		t.Errorf("spec.service unset: annotations %v, want only the cloud's", cur.Annotations)
	}
	if !none.same(cur) {
		t.Error("a repaired Service still counts as drifted")
	}
}
