package report

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// logTailLines bounds each log: the most recent lines are what a support case needs, and a
// busy node's log since it started would make the archive too big to send.
const logTailLines = int64(20000)

// containerLog is one container's log through the API server (pods/log): the current run, or
// with previous the one before the last restart.
func containerLog(ctx context.Context, core kubernetes.Interface, pod *corev1.Pod, container string, previous bool) ([]byte, error) {
	tail := logTailLines
	return core.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{
		Container: container, Previous: previous, TailLines: &tail, Timestamps: true,
	}).DoRaw(ctx)
}

// containerRun is a container of a pod and whether it restarted (then it has a previous log).
type containerRun struct {
	name      string
	restarted bool
}

// containers are a pod's containers, init containers first.
func containers(pod *corev1.Pod) []containerRun {
	restarts := map[string]int32{}
	for _, s := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		restarts[s.Name] = s.RestartCount
	}
	var out []containerRun
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		out = append(out, containerRun{c.Name, restarts[c.Name] > 0})
	}
	return out
}

// logPath is where a container's log goes in the archive.
func logPath(pod, container string, previous bool) string {
	if previous {
		return fmt.Sprintf("logs/%s/%s.previous.log", pod, container)
	}
	return fmt.Sprintf("logs/%s/%s.log", pod, container)
}
