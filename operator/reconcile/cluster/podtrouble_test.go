package cluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPodTroubleSaysWhatHoldsAPodBack: each way Kubernetes holds a Valkey pod back reads as
// what happened and what to change; Valkey's own error is kept when there is one.
func TestPodTroubleSaysWhatHoldsAPodBack(t *testing.T) {
	waiting := func(reason, msg string, last *corev1.ContainerStateTerminated) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-0"}, Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "valkey", Image: "registry.invalid/v:0", RestartCount: 3,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
			LastTerminationState: corev1.ContainerState{Terminated: last},
		}}}}
	}
	unschedulable := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-0"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
	}}}}
	pending := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-c-0"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("standard"), Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Ei")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	bound := pending.DeepCopy()
	bound.Status.Phase = corev1.ClaimBound
	oom := &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}
	for _, c := range []struct {
		name     string
		pod      *corev1.Pod
		claim    *corev1.PersistentVolumeClaim
		startErr string
		want     []string // "" for nothing
	}{
		{"pull", waiting("ErrImagePull", "rpc error: no such host", nil), nil, "", []string{"image registry.invalid/v:0 cannot be pulled (ErrImagePull: rpc error: no such host)", "set spec.image"}},
		{"pull back-off", waiting("ImagePullBackOff", `Back-off pulling image "registry.invalid/v:0"`, nil), nil, "", []string{"cannot be pulled (ImagePullBackOff", "set spec.image"}},
		{"crash loop", waiting("CrashLoopBackOff", "back-off 20s restarting failed container=valkey pod=c-0_ns(u)", oom), nil, "", []string{"it crash-loops (exit code 137, OOMKilled), and kubelet restarts it with a growing back-off", "raise spec.resources.limits.memory", "kubectl logs c-0 -c valkey --previous"}},
		{"crash loop with Valkey's words", waiting("CrashLoopBackOff", "back-off 10s", &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}), nil, "FATAL CONFIG FILE ERROR", []string{"FATAL CONFIG FILE ERROR (it crash-loops (exit code 1, Error)"}},
		{"claim pending", unschedulable, pending, "", []string{"its claim data-c-0 asks for 1Ei and is Pending: storage class standard did not provision it", "kubectl describe pvc data-c-0", "set spec.storage.size"}},
		{"unschedulable", unschedulable, bound, "", []string{"it cannot be scheduled: 0/3 nodes are available"}},
		{"running", &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}}, bound, "", []string{""}},
		{"Valkey's words alone", &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}}, nil, "Bad directive", []string{"Bad directive"}},
	} {
		got := podTrouble(c.pod, c.claim, c.startErr)
		for _, w := range c.want {
			if (w == "" && got != "") || !strings.Contains(got, w) {
				t.Errorf("%s: %q, want it to say %q", c.name, got, w)
			}
		}
	}
}
