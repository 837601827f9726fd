package sentinelreal

import (
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine/sim"
)

// The model's side of the table: a SentinelWorld with the real side's settings, one tick a
// second of Sentinel's clock.

// modelTickLimit bounds await: far beyond every scenario's few failover timeouts.
const modelTickLimit = 600

type modelGroup struct {
	sw    *sim.SentinelWorld
	nodes []sim.SentinelDataNode // by ordinal, as the world built them
	// ids maps every sentinel id the model used to its ordinal (a renewed sentinel's old
	// id and its new one both).
	ids map[string]int
}

func newModelGroup(t *testing.T) *modelGroup {
	topo := sim.Topologies["replication"]
	names := sim.NewSentinelWorld(topo, sim.Options{}, sim.DefaultSentinelConfig, nil).DataNodes()
	cfg := sim.SentinelConfig{Sentinels: 3, Quorum: 2, DownAfter: downAfterSeconds, FailoverTimeout: failoverTimeoutSeconds, ParallelSyncs: 1,
		Priority: map[string]int{names[0].Name: 100, names[1].Name: 10, names[2].Name: 20}}
	g := &modelGroup{sw: sim.NewSentinelWorld(topo, sim.Options{Trace: true}, cfg, nil), ids: map[string]int{}}
	g.nodes = g.sw.DataNodes()
	for i := 0; i < 3; i++ {
		g.ids[g.sw.View(i).ID] = i
	}
	g.await(t, "the sentinels find the replicas and each other", func(o observed) bool {
		for _, s := range o.sentinels {
			if s.others != 2 || s.master != 0 {
				return false
			}
		}
		return true
	})
	return g
}

func (g *modelGroup) ordinalAt(addr string) int {
	for i, n := range g.nodes {
		if n.Addr == addr {
			return i
		}
	}
	return -1
}

func (g *modelGroup) observe() observed {
	var o observed
	for i := 0; i < 3; i++ {
		v := g.sw.View(i)
		o.sentinels = append(o.sentinels, sentinelObs{up: v.Running, master: g.ordinalAt(v.Addr), configEpoch: v.ConfigEpoch, others: v.Sentinels, failover: v.Failover})
	}
	for _, n := range g.sw.DataNodes() {
		o.servers = append(o.servers, serverObs{up: n.Up, primary: n.Primary, master: g.ordinalAt(n.MasterAddr)})
	}
	for _, e := range g.sw.Events() {
		if e.Kind == "+promoted-slave" {
			by, ok := g.ids[e.Sentinel]
			if !ok {
				by = -1
			}
			o.promotedBy = append(o.promotedBy, by)
		}
	}
	return o
}

func (g *modelGroup) await(t *testing.T, what string, ok func(observed) bool) observed {
	t.Helper()
	for tick := 0; ; tick++ {
		o := g.observe()
		if ok(o) {
			return o
		}
		if tick == modelTickLimit {
			g.fail(t, "model: %s: not within %d ticks\n%s", what, modelTickLimit, o)
		}
		g.sw.Idle(1)
	}
}

func (g *modelGroup) fail(t *testing.T, format string, args ...any) {
	t.Helper()
	for _, e := range g.sw.Events() {
		t.Log(e)
	}
	t.Fatalf(format, args...)
}

func ref(i int) sim.NodeRef { return sim.NodeRef{Shard: 0, Ordinal: i} }

// killServer: the process is gone, so nobody reaches it: the model's kill restarts in
// place at once, so a dead process is a pause that lasts until startServer.
func (g *modelGroup) killServer(t *testing.T, i int) {
	g.sw.Step(sim.Step{Kind: sim.StepFault, Fault: sim.Fault{Kind: sim.FaultPause, Node: ref(i), Ticks: 1 << 30}})
}

// startServer restarts the process in place, as the world starts a pod's process.
func (g *modelGroup) startServer(t *testing.T, i int) {
	g.sw.Step(sim.Step{Kind: sim.StepFault, Fault: sim.Fault{Kind: sim.FaultKillNode, Node: ref(i)}})
}

func (g *modelGroup) partition(t *testing.T, servers, sentinels []int) {
	f := sim.Fault{Kind: sim.FaultPartition}
	for _, i := range servers {
		f.Nodes = append(f.Nodes, ref(i))
	}
	g.sw.Partition(sim.Step{Kind: sim.StepFault, Fault: f}, sentinels...)
}

func (g *modelGroup) heal(t *testing.T) {
	g.sw.Step(sim.Step{Kind: sim.StepFault, Fault: sim.Fault{Kind: sim.FaultHeal}})
}

func (g *modelGroup) killSentinel(t *testing.T, i int) {
	if err := g.sw.Apply(sim.SentinelFault{Kind: sim.SentinelKill, Sentinel: i}); err != nil {
		t.Fatal(err)
	}
}

func (g *modelGroup) renewSentinel(t *testing.T, i, master int) {
	if err := g.sw.Apply(sim.SentinelFault{Kind: sim.SentinelRenewed, Sentinel: i, Addr: g.nodes[master].Addr}); err != nil {
		t.Fatal(err)
	}
	g.ids[g.sw.View(i).ID] = i
}

func (g *modelGroup) sentinelFailover(t *testing.T, i int) error {
	return g.sw.Apply(sim.SentinelFault{Kind: sim.SentinelFailover, Sentinel: i})
}

func TestScenariosAgainstTheModel(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			sc.play(t, newModelGroup(t))
		})
	}
}
