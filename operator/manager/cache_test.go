package manager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cached Pod keeps what the operator reads (see podFacts in operator/reconcile/cluster)
// and drops the spec.
func TestTheCachedPodKeepsWhatTheOperatorReads(t *testing.T) {
	now := metav1.Now()
	running := corev1.ContainerStatus{Name: "valkey", ContainerID: "containerd://1", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "v-0", Namespace: "ns", UID: "u", Labels: map[string]string{"valkey.fsm.dev/role": "primary"},
			Annotations: map[string]string{"valkey.fsm.dev/revision": "r1"}, DeletionTimestamp: &now,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "valkey", Image: "valkey:9.1", Args: []string{"--port", "6379"}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.5", HostIP: "127.0.0.1",
			Conditions:            []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses:     []corev1.ContainerStatus{running},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init"}}},
	}
	out, err := podTransform(pod)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if got.Name != "v-0" || got.UID != "u" || got.Labels["valkey.fsm.dev/role"] != "primary" || got.Annotations["valkey.fsm.dev/revision"] != "r1" || got.DeletionTimestamp == nil {
		t.Fatalf("metadata lost: %+v", got.ObjectMeta)
	}
	if got.Status.PodIP != "127.0.0.5" || len(got.Status.Conditions) != 1 || len(got.Status.ContainerStatuses) != 1 || got.Status.ContainerStatuses[0].ContainerID != "containerd://1" || got.Status.Phase != corev1.PodRunning {
		t.Fatalf("status lost: %+v", got.Status)
	}
	if len(got.Spec.Containers) != 0 || got.Spec.NodeName != "" || got.ManagedFields != nil || got.Status.HostIP != "" || got.Status.InitContainerStatuses != nil {
		t.Fatalf("kept what nothing reads: spec %+v, managedFields %v, status %+v", got.Spec, got.ManagedFields, got.Status)
	}
	// Other objects pass through.
	if o, _ := podTransform("x"); o != "x" {
		t.Fatalf("a non-Pod was changed: %v", o)
	}
}
