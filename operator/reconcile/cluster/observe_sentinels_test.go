package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// A sentinel that runs and does not answer says why in status (a refused password is the
// user's to see, not a debug log's); one that answers names the primary by pod.
func TestSentinelStatusSaysWhyASentinelDoesNotAnswer(t *testing.T) {
	obs := machine.Observation{
		Nodes: []machine.Node{{Name: "c-0", Pod: machine.Pod{IP: "127.0.0.10"}}},
		Sentinels: []machine.Sentinel{
			{Name: "c-sentinel-0", IP: "127.0.0.20", Reachable: true, Monitoring: true, PrimaryIP: "127.0.0.10", ConfigEpoch: 2, Peers: 2},
			{Name: "c-sentinel-1", IP: "127.0.0.21"},
		},
	}
	got := sentinelStatuses(obs, map[string]string{"c-sentinel-1": "WRONGPASS invalid username-password pair", "c-sentinel-0": "stale"})
	if got[0].Primary != "c-0" || got[0].ConfigEpoch != 2 || got[0].Error != "" {
		t.Errorf("the answering sentinel: %+v", got[0])
	}
	if got[1].Answering || got[1].Error != "WRONGPASS invalid username-password pair" {
		t.Errorf("the silent sentinel does not say why: %+v", got[1])
	}
}

// A sentinel pod reads as the revision of the template it was made from; one made before the
// sentinels' template had a revision reads as one no template has (so it is restarted onto
// the current one), never as "" (no pod: nothing to restart).
func TestASentinelPodWithoutARevisionIsStale(t *testing.T) {
	pod := &corev1.Pod{}
	if got := sentinelPodRevision(pod); got == "" {
		t.Fatal("a pod without a revision reads as no pod")
	}
	pod.Annotations = map[string]string{kube.AnnotationRevision: "abc"}
	if got := sentinelPodRevision(pod); got != "abc" {
		t.Fatalf("revision %q, want abc", got)
	}
}
