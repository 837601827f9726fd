package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

func buildSpec(t *testing.T, topology v1beta1.Topology, set func(*v1beta1.ValkeyClusterSpec)) Desired {
	t.Helper()
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1beta1.ValkeyClusterSpec{Topology: topology}}
	set(&vc.Spec)
	v1beta1.SetDefaults(&vc.Spec)
	return Build(vc, metav1.OwnerReference{Name: "c", UID: "u"})
}

func withKnobs(s *v1beta1.ValkeyClusterSpec) {
	s.ImagePullPolicy = corev1.PullNever
	s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	s.PodLabels = map[string]string{"team": "cart"}
	s.PodAnnotations = map[string]string{"scrape": "true"}
	s.PriorityClassName = "data"
	s.ServiceAccountName = "valkey"
	s.Service = &v1beta1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Annotations: map[string]string{"lb": "internal"}}
}

// Each day-one knob lands where Kubernetes reads it, on every shard's pods, and the service
// account's token stays out of the pods.
func TestKnobsReachThePodTemplateAndClientServices(t *testing.T) {
	for _, topology := range []v1beta1.Topology{v1beta1.TopologyReplication, v1beta1.TopologyCluster} {
		d := buildSpec(t, topology, withKnobs)
		for s := 0; s < 2; s++ {
			tmpl := d.ShardSet(s).Spec.Template
			pod := tmpl.Spec
			if c := pod.Containers[0]; c.ImagePullPolicy != corev1.PullNever {
				t.Errorf("%s: imagePullPolicy %q", topology, c.ImagePullPolicy)
			}
			if len(pod.ImagePullSecrets) != 1 || pod.ImagePullSecrets[0].Name != "registry" {
				t.Errorf("%s: imagePullSecrets %v", topology, pod.ImagePullSecrets)
			}
			if pod.PriorityClassName != "data" || pod.ServiceAccountName != "valkey" {
				t.Errorf("%s: priorityClassName %q, serviceAccountName %q", topology, pod.PriorityClassName, pod.ServiceAccountName)
			}
			if ptr.Deref(pod.AutomountServiceAccountToken, true) {
				t.Errorf("%s: the service account's token is mounted", topology)
			}
			if tmpl.Labels["team"] != "cart" || tmpl.Annotations["scrape"] != "true" {
				t.Errorf("%s: template labels %v, annotations %v", topology, tmpl.Labels, tmpl.Annotations)
			}
			if tmpl.Annotations[AnnotationRevision] != d.Revision {
				t.Errorf("%s: revision annotation %q, want %q", topology, tmpl.Annotations[AnnotationRevision], d.Revision)
			}
		}
		for _, svc := range []*corev1.Service{d.Client, d.Replicas} {
			if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Annotations["lb"] != "internal" {
				t.Errorf("%s: Service %s: type %q, annotations %v", topology, svc.Name, svc.Spec.Type, svc.Annotations)
			}
		}
		if d.Headless.Spec.ClusterIP != corev1.ClusterIPNone || d.Headless.Spec.Type != "" || len(d.Headless.Annotations) != 0 {
			t.Errorf("%s: the headless Service changed: %+v", topology, d.Headless)
		}
	}
}

// A user's label or annotation with a key the operator sets on its pods never replaces the
// operator's: the selector's labels keep the pod in its cluster, and no label or annotation
// under valkey.fsm.dev/ comes from the user (a role label would put a new pod into a client
// Service before the operator has seen its role).
func TestOperatorOwnedPodKeysWin(t *testing.T) {
	d := buildSpec(t, v1beta1.TopologyCluster, func(s *v1beta1.ValkeyClusterSpec) {
		s.PodLabels = map[string]string{
			"app.kubernetes.io/name": "mine", "app.kubernetes.io/instance": "other", "app.kubernetes.io/managed-by": "me",
			LabelCluster: "other", LabelShard: "9", LabelRole: RolePrimary, "team": "cart",
		}
		s.PodAnnotations = map[string]string{AnnotationRevision: "0000", AnnotationTLS: "only", "scrape": "true"}
	})
	tmpl := d.ShardSet(1).Spec.Template
	want := map[string]string{"app.kubernetes.io/name": "valkey", "app.kubernetes.io/instance": "c", LabelCluster: "c", LabelShard: "1", "team": "cart"}
	if len(tmpl.Labels) != len(want) {
		t.Errorf("template labels %v, want %v", tmpl.Labels, want)
	}
	for k, v := range want {
		if tmpl.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, tmpl.Labels[k], v)
		}
	}
	if tmpl.Annotations[AnnotationRevision] != d.Revision {
		t.Errorf("revision annotation %q, want %q", tmpl.Annotations[AnnotationRevision], d.Revision)
	}
	if _, ok := tmpl.Annotations[AnnotationTLS]; ok {
		t.Errorf("a cluster without TLS carries the user's %s annotation", AnnotationTLS)
	}
	if tmpl.Annotations["scrape"] != "true" {
		t.Errorf("annotations %v", tmpl.Annotations)
	}
}

// Every knob of the pod is part of the revision (changing it rolls the pods, see podmeta.go);
// the Services' knobs are not (they change the Services in place).
func TestPodKnobsChangeTheRevisionServiceKnobsDoNot(t *testing.T) {
	base := buildSpec(t, v1beta1.TopologyReplication, func(*v1beta1.ValkeyClusterSpec) {}).Revision
	for name, set := range map[string]func(*v1beta1.ValkeyClusterSpec){
		"imagePullPolicy":    func(s *v1beta1.ValkeyClusterSpec) { s.ImagePullPolicy = corev1.PullAlways },
		"imagePullSecrets":   func(s *v1beta1.ValkeyClusterSpec) { s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "r"}} },
		"podLabels":          func(s *v1beta1.ValkeyClusterSpec) { s.PodLabels = map[string]string{"team": "cart"} },
		"podAnnotations":     func(s *v1beta1.ValkeyClusterSpec) { s.PodAnnotations = map[string]string{"team": "cart"} },
		"priorityClassName":  func(s *v1beta1.ValkeyClusterSpec) { s.PriorityClassName = "data" },
		"serviceAccountName": func(s *v1beta1.ValkeyClusterSpec) { s.ServiceAccountName = "valkey" },
	} {
		if buildSpec(t, v1beta1.TopologyReplication, set).Revision == base {
			t.Errorf("%s does not change the revision: a change would never reach the running pods", name)
		}
	}
	labelled := buildSpec(t, v1beta1.TopologyReplication, func(s *v1beta1.ValkeyClusterSpec) { s.PodLabels = map[string]string{"team": "cart"} }).Revision
	annotated := buildSpec(t, v1beta1.TopologyReplication, func(s *v1beta1.ValkeyClusterSpec) { s.PodAnnotations = map[string]string{"team": "cart"} }).Revision
	if labelled == annotated {
		t.Error("a label and an annotation of the same key and value make the same revision")
	}
	svc := buildSpec(t, v1beta1.TopologyReplication, func(s *v1beta1.ValkeyClusterSpec) {
		s.Service = &v1beta1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Annotations: map[string]string{"lb": "internal"}}
	}).Revision
	if svc != base {
		t.Error("spec.service changes the revision: changing a Service's type would roll the pods")
	}
}
