package cluster

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/machine"
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

// The claims a scale-down kept are idle: no pod, on places the StatefulSets do not ask for.
// A pod being created (its place asked for) or still running is not, whatever the claim's age.
func TestIdleClaimsAreTheKeptOnesNoPodRunsOn(t *testing.T) {
	names := kube.Names{StatefulSet: "c"}
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for _, pod := range []string{"c-0", "c-1", "c-2", "c-3", "c-4", "other-5"} {
		claims[pod] = &corev1.PersistentVolumeClaim{}
	}
	pods := map[string]*corev1.Pod{"c-0": {}, "c-3": {}}
	got := idleClaims(claims, pods, machine.Objects{Shards: 1, Replicas: 1}, names)
	want := []machine.Claim{{Name: "c-2", Ordinal: 2}, {Name: "c-4", Ordinal: 4}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("idleClaims = %+v, want %+v (c-1 is asked for, c-3 still runs, other-5 is not the cluster's)", got, want)
	}
	if got := idleClaims(claims, pods, machine.Objects{Shards: 1, Replicas: 4}, names); len(got) != 0 {
		t.Fatalf("with every place asked for no claim is idle, got %+v", got)
	}
}
