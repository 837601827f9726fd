package sim

import (
	"context"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine/conformance"
)

// The simulated actuators against the actuator contract; e2e/operatorsuite's
// TestRealActuatorsConformToTheTable runs the same table against the real ones.
func TestSimulatedActuatorsConformToTheTable(t *testing.T) {
	w, err := NewConformanceWorld(Topologies["replication-persistent"])
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(context.Background(), w, func(row conformance.Row, err error) {
		if err != nil {
			t.Errorf("%s: %v", row.Name, err)
		} else {
			t.Logf("ok: %s", row.Name)
		}
	})
}

// The sentinels' rows (conformance.SentinelTable) against the simulated actuators and the
// sentinel model; e2e/sentinelreal's TestRealSentinelActuatorsConformToTheTable runs them
// against the real actuators and real valkey-sentinel processes.
func TestSimulatedActuatorsConformToTheSentinelTable(t *testing.T) {
	w, err := NewSentinelConformanceWorld()
	if err != nil {
		t.Fatal(err)
	}
	conformance.RunSentinel(context.Background(), w, func(row conformance.Row, err error) {
		if err != nil {
			t.Errorf("%s: %v", row.Name, err)
		} else {
			t.Logf("ok: %s", row.Name)
		}
	})
}

// The cluster-mode rows (conformance.ClusterTable) against the simulated actuators;
// e2e/operatorsuite's TestRealActuatorsConformToTheClusterTable runs them against the real
// ones.
func TestSimulatedActuatorsConformToTheClusterTable(t *testing.T) {
	w, err := NewClusterConformanceWorld(Topologies["cluster"])
	if err != nil {
		t.Fatal(err)
	}
	conformance.RunCluster(context.Background(), w, func(row conformance.Row, err error) {
		if err != nil {
			t.Errorf("%s: %v", row.Name, err)
		} else {
			t.Logf("ok: %s", row.Name)
		}
	})
}
