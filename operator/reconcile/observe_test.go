package reconcile

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

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

// A node that knows a pod at the pod's old address must be introduced again (not joined); a
// node that knows an ID no pod has (a ghost) is joined all the same while every answering pod
// names its ID (the machine forgets the ghost; meeting cannot bring back a pod that does not
// answer), and not while a pod answers without its ID (the unknown ID may be that pod, at an
// address it no longer has).
func TestStaleAddressesMatchPeersByID(t *testing.T) {
	nodes := func() []machine.Node {
		out := make([]machine.Node, 3)
		for i := range out {
			out[i].Pod.IP = "127.0.0." + string(rune('1'+i))
			out[i].Reachable = true
			out[i].Valkey.NodeID = "id" + string(rune('0'+i))
			out[i].Valkey.Joined = true
		}
		for i := range out {
			for j := range out {
				if i != j {
					out[i].Valkey.Known = append(out[i].Valkey.Known, machine.KnownNode{ID: out[j].Valkey.NodeID, IP: out[j].Pod.IP})
				}
			}
		}
		return out
	}
	joined := func(ns []machine.Node) (out []bool) {
		for _, n := range ns {
			out = append(out, n.Valkey.Joined)
		}
		return out
	}
	ns := nodes()
	staleAddresses(ns)
	if got := joined(ns); !got[0] || !got[1] || !got[2] {
		t.Fatalf("all current: joined %v", got)
	}
	ns = nodes()
	ns[0].Valkey.Known[0].IP = "127.0.0.99" // node 0 knows node 1 at an old address
	staleAddresses(ns)
	if got := joined(ns); got[0] || !got[1] || !got[2] {
		t.Fatalf("node 0 knows node 1 at an old address: joined %v, want only node 0 not joined", got)
	}
	ns = nodes()
	ns[1].Valkey.Known = append(ns[1].Valkey.Known, machine.KnownNode{ID: "ghost", IP: "127.0.0.98"})
	staleAddresses(ns)
	if got := joined(ns); !got[0] || !got[1] || !got[2] {
		t.Fatalf("a ghost known by node 1: joined %v, want all joined", got)
	}
	ns = nodes()
	ns[1].Valkey.Known = append(ns[1].Valkey.Known, machine.KnownNode{ID: "ghost", IP: "127.0.0.98"})
	ns[2].Reachable, ns[2].Valkey.NodeID = false, ""
	staleAddresses(ns)
	if got := joined(ns); !got[1] {
		t.Fatalf("an unknown ID while node 2 does not answer (meeting cannot bring it back): joined %v, want node 1 joined", got)
	}
	ns = nodes()
	ns[1].Valkey.Known = append(ns[1].Valkey.Known, machine.KnownNode{ID: "ghost", IP: "127.0.0.98"})
	ns[2].Valkey.NodeID = "" // answers, without naming its ID: the unknown ID may be it
	staleAddresses(ns)
	if got := joined(ns); got[1] {
		t.Fatalf("an unknown ID at a stale address while node 2 answers without its ID: joined %v, want node 1 not joined", got)
	}
}
