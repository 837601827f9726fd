package sim

import (
	"context"
	"testing"

	"github.com/valkey-fsm/valkey-operator/internal/actionkinds"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/conformance"
)

// Every action the machine can decide has a row in the actuator contract: the kinds are read
// from the machine's source (every Kind method returning a literal), the rows' kinds from what
// the tables apply to the simulated worlds.
func TestEveryActionKindHasAConformanceRow(t *testing.T) {
	applied := map[string]bool{}
	w, err := NewConformanceWorld(Topologies["replication-persistent"])
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(context.Background(), recordingWorld{w, applied}, func(conformance.Row, error) {})
	cw, err := NewClusterConformanceWorld(Topologies["cluster"])
	if err != nil {
		t.Fatal(err)
	}
	conformance.RunCluster(context.Background(), recordingClusterWorld{cw, applied}, func(conformance.Row, error) {})

	sw, err := NewSentinelConformanceWorld()
	if err != nil {
		t.Fatal(err)
	}
	conformance.RunSentinel(context.Background(), recordingWorld{sw, applied}, func(conformance.Row, error) {})

	kinds, err := actionkinds.FromSource("..")
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) < 20 {
		t.Fatalf("found only the action kinds %v in the machine's source", kinds)
	}
	for _, k := range kinds {
		if !applied[k] {
			t.Errorf("no conformance row applies a %s action", k)
		}
	}
}

type recordingWorld struct {
	conformance.World
	applied map[string]bool
}

func (r recordingWorld) Apply(ctx context.Context, a machine.Action) error {
	r.applied[a.Kind()] = true
	return r.World.Apply(ctx, a)
}

type recordingClusterWorld struct {
	conformance.ClusterWorld
	applied map[string]bool
}

func (r recordingClusterWorld) Apply(ctx context.Context, a machine.Action) error {
	r.applied[a.Kind()] = true
	return r.ClusterWorld.Apply(ctx, a)
}
