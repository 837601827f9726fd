package cluster

import (
	"testing"

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
