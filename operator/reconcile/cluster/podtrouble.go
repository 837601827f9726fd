package cluster

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// podTrouble is why a node's pod does not start when Kubernetes, not Valkey, holds it back,
// worded for the user with what to change: its image cannot be pulled, its claim is not
// provisioned (or it cannot be scheduled), or its container crash-loops without a message of
// its own. It returns startErr (Valkey's own error, from the termination message) when that
// says more, and "" when nothing holds the pod back.
func podTrouble(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim, startErr string) string {
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name != "valkey" || c.State.Waiting == nil {
			continue
		}
		w := c.State.Waiting
		switch w.Reason {
		case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
			return fmt.Sprintf("image %s cannot be pulled (%s: %s): set spec.image to an image the nodes can pull, or give the pods an imagePullSecret", c.Image, w.Reason, bounded(w.Message))
		case "CrashLoopBackOff":
			// No restart count nor delay: the words stay the same for the whole loop, so
			// that status and the event change once, not at every restart.
			loop, advice := "it crash-loops", fmt.Sprintf("kubectl logs %s -c valkey --previous shows its last run", pod.Name)
			if t := c.LastTerminationState.Terminated; t != nil {
				loop += fmt.Sprintf(" (exit code %d, %s)", t.ExitCode, t.Reason)
				if t.Reason == "OOMKilled" {
					advice = "raise spec.resources.limits.memory (or lower maxmemory in spec.config); " + advice
				}
			}
			loop += ", and kubelet restarts it with a growing back-off"
			if startErr != "" {
				return startErr + " (" + loop + ")"
			}
			return loop + ": " + advice
		case "CreateContainerConfigError", "CreateContainerError":
			return fmt.Sprintf("its container cannot be created (%s: %s)", w.Reason, bounded(w.Message))
		}
	}
	if startErr != "" {
		return startErr
	}
	if pod.Spec.NodeName != "" {
		return ""
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
			continue
		}
		if claim != nil && claim.Status.Phase == corev1.ClaimPending {
			class := "the default storage class"
			if claim.Spec.StorageClassName != nil {
				class = "storage class " + *claim.Spec.StorageClassName
			}
			return fmt.Sprintf("its claim %s asks for %s and is Pending: %s did not provision it (kubectl describe pvc %s says why); set spec.storage.size to what the storage can hold, or spec.storage.storageClassName to a class with room",
				claim.Name, claim.Spec.Resources.Requests.Storage().String(), class, claim.Name)
		}
		return "it cannot be scheduled: " + bounded(c.Message)
	}
	return ""
}

// bounded keeps a message from Kubernetes to one line of at most 300 characters, as status
// carries it.
func bounded(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return msg
}
