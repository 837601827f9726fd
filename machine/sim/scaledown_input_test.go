package sim

import (
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The simulated operator checks a scale-down with the input the operator builds
// (machine.ScaleDownOf): the shards the action removes are checked empty and off the bus too,
// so a decision the operator would refuse on every turn is refused in the simulator as well.
func TestTheSimulatorChecksTheShardsAScaleDownRemoves(t *testing.T) {
	s := New(Topologies["cluster"], Options{})
	for i := 0; i < 40; i++ {
		s.Step(Step{Kind: StepOperator})
	}
	s.Converge()
	if vs := s.Violations(); len(vs) > 0 {
		t.Fatal(vs)
	}
	w := s.w
	if w.objects.Shards != 2 {
		t.Fatalf("want the cluster topology's 2 shards running, objects %+v", w.objects)
	}
	// Shard 1's pods serve slots and are on the bus: removing the shard would drop them.
	a := machine.EnsureObjects{Shards: 1, Replicas: w.objects.Replicas, Revision: w.objects.Revision}
	_, err := machine.CheckScaleDown(w.scaleDown(a))
	if err == nil || !strings.Contains(err.Error(), "not removing shard 1") {
		t.Fatalf("removing a shard that serves slots: got %v, want it refused", err)
	}
}
