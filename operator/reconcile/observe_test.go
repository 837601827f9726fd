package reconcile

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A crash-looping container runs for a moment between back-offs; its reason must stay in
// status while it does (the end-to-end test saw it blink out under the race detector), and go
// once the container is ready.
func TestStartErrorSurvivesTheMomentsACrashLoopRuns(t *testing.T) {
	failed := &corev1.ContainerStateTerminated{ExitCode: 1, Message: "1:C 24 Nov\n*** FATAL CONFIG FILE ERROR (Version 9.1.0) ***\n>>> 'maxmemory lots'\nargument must be a memory value\n"}
	cases := []struct {
		name string
		c    corev1.ContainerStatus
		want string
	}{
		{"waiting after a failure", corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, LastTerminationState: corev1.ContainerState{Terminated: failed}}, "FATAL CONFIG FILE ERROR"},
		{"terminated", corev1.ContainerStatus{State: corev1.ContainerState{Terminated: failed}}, "maxmemory lots"},
		{"running again, not ready", corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, LastTerminationState: corev1.ContainerState{Terminated: failed}}, "argument must be a memory value"},
		{"running and ready", corev1.ContainerStatus{Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, LastTerminationState: corev1.ContainerState{Terminated: failed}}, ""},
		{"stopped cleanly", corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: "bye"}}}, ""},
	}
	for _, c := range cases {
		got := startError(c.c)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: startError = %q, want it to contain %q", c.name, got, c.want)
		}
	}
}
