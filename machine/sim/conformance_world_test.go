package sim

import (
	"context"
	"fmt"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/conformance"
)

// ConformanceWorld is the simulated side of the actuator contract (machine/conformance): a
// world brought to Steady by the simulated operator, which then stops acting; the table's
// actions go through World.Apply, the actuator the simulated operator uses.
type ConformanceWorld struct{ s *Sim }

// NewConformanceWorld converges a cluster of topology t and hands it to the table.
func NewConformanceWorld(t Topology) (*ConformanceWorld, error) {
	s := New(t, Options{})
	s.Converge()
	if v := s.Violations(); len(v) > 0 {
		return nil, fmt.Errorf("the world before the table: %v", v)
	}
	return &ConformanceWorld{s: s}, nil
}

// Apply carries out a through the simulated actuators.
func (c *ConformanceWorld) Apply(ctx context.Context, a machine.Action) error {
	// On the clock of Observe's observations (no operator incarnation: "").
	c.s.w.actingClock, c.s.w.actingSkew = "", 0
	return c.s.w.Apply(ctx, a)
}

// Observe is what the simulated operator would see now.
func (c *ConformanceWorld) Observe(context.Context) (machine.Observation, error) {
	return c.s.w.observe(map[string]int{}), nil
}

// awaitTicks bounds Await: more than any effect takes in the simulated world (a pod is
// re-created in a tick, a process answers a tick later, a link comes up on the next pump).
const awaitTicks = 30

// Await lets ticks pass (pods, replication; no operator) until cond holds.
func (c *ConformanceWorld) Await(ctx context.Context, what string, cond func(machine.Observation) bool) error {
	var o machine.Observation
	for i := 0; i < awaitTicks; i++ {
		o, _ = c.Observe(ctx)
		if cond(o) {
			return nil
		}
		c.s.advance()
	}
	return fmt.Errorf("%s: not within %d ticks; last seen: %s", what, awaitTicks, conformance.Describe(o))
}

// PrepareRotation requests a rotation and prepares it as the simulated operator does.
func (c *ConformanceWorld) PrepareRotation(context.Context) (string, error) {
	w := c.s.w
	if w.rotation == "" {
		w.spec.Rotation = &machine.RotationRequest{ID: "conformance@1", Users: []string{"default", "replication"}}
		if why := w.prepareRotation(machine.Persisted{}); why != "" {
			return "", fmt.Errorf("rotation not prepared: %s", why)
		}
	}
	return w.rotation, nil
}

// TakeSnapshot is a backup as the simulated world takes one (Sim.backup).
func (c *ConformanceWorld) TakeSnapshot(context.Context) (string, error) {
	n := len(c.s.w.snapshots)
	c.s.backup()
	if len(c.s.w.snapshots) == n {
		return "", fmt.Errorf("no snapshot taken: %s", conformance.Describe(c.s.w.observe(map[string]int{})))
	}
	return c.s.w.snapshots[n].id, nil
}

// ClusterConformanceWorld is the simulated side of the cluster-mode contract
// (conformance.ClusterTable): a converged cluster of topology "cluster" (two shards of a primary
// and a replica) with keys written into both shards by the simulated client.
type ClusterConformanceWorld struct {
	ConformanceWorld
	written []int32 // the writes made before the table, by id
}

// conformanceKeys is how many keys the world writes before the table: every key slot of the
// model (slotOf) gets two.
const conformanceKeys = 64

// NewClusterConformanceWorld converges a cluster of topology t (cluster mode) and writes
// conformanceKeys keys into it, each WAIT-acknowledged.
func NewClusterConformanceWorld(t Topology) (*ClusterConformanceWorld, error) {
	c, err := NewConformanceWorld(t)
	if err != nil {
		return nil, err
	}
	w := c.s.w
	cw := &ClusterConformanceWorld{ConformanceWorld: *c}
	for k := 0; k < conformanceKeys; k++ {
		id := int32(len(w.writes))
		w.write(Write{Key: k, Wait: true})
		if int(id) >= len(w.writes) || !w.writes[id].waitAcked {
			return nil, fmt.Errorf("the world before the table: write of key %d not acknowledged", k)
		}
		cw.written = append(cw.written, id)
	}
	return cw, nil
}

// CheckData reads every key written before the table as a cluster client would: from the
// primary that serves the key's slot, which must hold the write.
func (c *ClusterConformanceWorld) CheckData(context.Context) error {
	w := c.s.w
	for _, id := range c.written {
		key := w.writes[id].key
		s := w.shardOfKey(key)
		found := false
		for _, n := range w.shardNodes(s) {
			if n.role == machine.RolePrimary && w.serves(n) && w.clientTalks(n) && n.has.get(id) {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("key %d (slot %d, shard %d): no primary serving it holds write %d", key, slotOf(key), s, id)
		}
	}
	return nil
}

// EmptyRestart restarts the node's process on an empty volume (the fault empty-restart).
func (c *ClusterConformanceWorld) EmptyRestart(_ context.Context, node string) error {
	n := c.s.w.byName(node)
	if n == nil || !n.exists {
		return fmt.Errorf("%s: no pod", node)
	}
	n.volumeLost = true
	c.s.w.restart(n, false)
	return nil
}

// NewSentinelConformanceWorld is the simulated side of the sentinels' contract
// (conformance.SentinelTable): a converged cluster of the Sentinel topology whose three
// sentinels' pods were then re-created without their files, so that they answer and monitor
// nothing, as the topology's sentinels start.
func NewSentinelConformanceWorld() (*ConformanceWorld, error) {
	c, err := NewConformanceWorld(OpenTopologies["sentinel"])
	if err != nil {
		return nil, err
	}
	w := c.s.w
	for i := range w.topo.Sentinel.Sentinels {
		w.sentinelFault(Fault{Kind: FaultRenewSentinel, Sentinel: i})
	}
	return c, nil
}
