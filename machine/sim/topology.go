package sim

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Topology is the shape of a simulated cluster.
type Topology struct {
	Name        string
	Mode        machine.Mode
	Shards      int
	Replicas    int
	Persistence bool
	// FsyncAlways: nodes fsync every write before they acknowledge it (appendfsync always).
	// Without it a killed process loses the writes of its last two ticks (see node.disk).
	FsyncAlways bool
	// MinSyncReplicas is both min-replicas-to-write on every node and the WAIT count of the
	// client's durable writes.
	MinSyncReplicas int
	// ReshardTo lists the shard counts the user may ask for (cluster mode).
	ReshardTo []int
	// MinReplicas and MaxReplicas bound the replica counts the user may scale to (scale-up
	// and scale-down change the count by one within them; both 0: no scaling). Below
	// MinSyncReplicas replicas a primary refuses every write (min-replicas-to-write).
	MinReplicas, MaxReplicas int
	// FailureThreshold is the machine's detection probes (0: the simulator's default).
	FailureThreshold int
	// Sentinel, when set, makes it the Sentinel topology: these sentinels watch shard 0
	// (sentinel_topology.go).
	Sentinel *SentinelConfig
	// Start are steps every run plays before its schedule (a cluster brought to a journal's
	// last state: FromJournal); they are not part of the schedule, so shrinking keeps them.
	Start []Step
}

// Topologies are the presets the simulate command and the tests use.
var Topologies = map[string]Topology{
	// One primary, two replicas, no persistence: the Kubernetes hazard at full strength.
	"replication": {Name: "replication", Mode: machine.ModeReplication, Shards: 1, Replicas: 2, MinSyncReplicas: 1, MinReplicas: 0, MaxReplicas: 3},
	// The same with persistence: restarted nodes keep their data and may be re-admitted.
	// appendfsync everysec, Valkey's default and the Durable profile's.
	"replication-persistent": {Name: "replication-persistent", Mode: machine.ModeReplication, Shards: 1, Replicas: 2, Persistence: true, MinSyncReplicas: 1, MinReplicas: 1, MaxReplicas: 3},
	// The same with appendfsync always: a killed process keeps every write it acknowledged.
	"replication-fsync-always": {Name: "replication-fsync-always", Mode: machine.ModeReplication, Shards: 1, Replicas: 2, Persistence: true, FsyncAlways: true, MinSyncReplicas: 1, MinReplicas: 1, MaxReplicas: 3},
	// A single node with persistence: no failover possible, restarts must be ridden out. It
	// is not scaled: with MinSyncReplicas 0 nothing stops an isolated primary from accepting
	// writes, so FenceTimeout does not bound it (see docs/development/simulation.md).
	"single": {Name: "single", Mode: machine.ModeReplication, Shards: 1, Replicas: 0, Persistence: true},
	// Cluster mode, two shards of a primary and a replica, resharding between 2 and 3,
	// scaling between 1 and 2 replicas.
	"cluster": {Name: "cluster", Mode: machine.ModeCluster, Shards: 2, Replicas: 1, MinSyncReplicas: 1, ReshardTo: []int{2, 3}, MinReplicas: 1, MaxReplicas: 2},
}

// OpenTopologies are presets that find open violations within a few hundred schedules (each
// kept under testdata/open/): simulate runs them when named (-topology), never as part of
// "all", the tests or make chaos, which would fail on them every time. A preset moves to
// Topologies once its findings are fixed.
var OpenTopologies = map[string]Topology{
	// The cluster preset with persistence (appendfsync everysec), as real clusters run (profile
	// Durable): a restarted node comes back from its append-only file with its data and its
	// nodes.conf, so a primary a failover deposed rejoins holding writes off its shard's line.
	// Open: a wake or a re-creation on kept claims with fewer shards than the claims hold
	// starts only the spec's shards, and the writes on the others' volumes are lost
	// (lost-wait-write): testdata/open/cluster-persistent-*.sched.
	"cluster-persistent": {Name: "cluster-persistent", Mode: machine.ModeCluster, Shards: 2, Replicas: 1, Persistence: true, MinSyncReplicas: 1, ReshardTo: []int{2, 3}, MinReplicas: 1, MaxReplicas: 2},
	// The Sentinel topology: a primary and two replicas without persistence, watched by three
	// sentinels (quorum 2, down-after 5 ticks) that decide its failovers; the machine records
	// them, and hands planned changes (switchovers, rollouts, scale-downs, deleted primaries)
	// over through them. Open while about 2 % of its schedules end waiting (no-steady) on a
	// history the take-over cannot place; docs/development/sentinel-topology.md lists them.
	"sentinel": {Name: "sentinel", Mode: machine.ModeSentinel, Shards: 1, Replicas: 2, MinSyncReplicas: 1, Sentinel: &DefaultSentinelConfig},
}

// TopologyNames lists the presets, sorted.
func TopologyNames() []string {
	names := make([]string, 0, len(Topologies))
	for n := range Topologies {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupTopology finds a preset by name.
func LookupTopology(name string) (Topology, error) {
	if t, ok := Topologies[name]; ok {
		return t, nil
	}
	if t, ok := OpenTopologies[name]; ok {
		return t, nil
	}
	return Topology{}, fmt.Errorf("unknown topology %q (known: %s)", name, strings.Join(knownTopologyNames(), ", "))
}

// knownTopologyNames lists every preset LookupTopology finds, sorted: the open ones too.
func knownTopologyNames() []string {
	names := TopologyNames()
	for n := range OpenTopologies {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Timing of the world, in ticks. One tick is one step of a schedule and one second of the
// observations' clock.
const (
	// maxLag is min-replicas-max-lag: a primary counts a replica for min-replicas-to-write
	// only if it acknowledged within maxLag ticks.
	maxLag = 20
	// fenceTimeout is the machine's FenceTimeout: maxLag plus a margin.
	fenceTimeout = (maxLag + 2) * time.Second
	// rotationGrace is how long old passwords keep working after a rotation publishes the new.
	rotationGrace = 8 * time.Second
	// failureThreshold is the machine's FailureThreshold in probes (one per reconcile).
	failureThreshold = 2
	// startTicks is how long a restarted process takes before it answers.
	startTicks = 1
	// historyLimit bounds status.history.
	historyLimit = 8
)

// maxReplicas is the highest replica count the topology may have.
func (t Topology) maxReplicas() int { return max(t.Replicas, t.MaxReplicas) }

// initialSpec is the spec a topology starts with.
func (t Topology) initialSpec() machine.Spec {
	sentinels, settings := 0, machine.SentinelSettings{}
	sentinelRevision := ""
	if t.Sentinel != nil {
		sentinels, settings, sentinelRevision = t.Sentinel.Sentinels, t.Sentinel.settings(), "s1"
	}
	return machine.Spec{
		Sentinels:        sentinels,
		SentinelSettings: settings,
		SentinelRevision: sentinelRevision,
		Generation:       1,
		Mode:             t.Mode,
		Shards:           t.Shards,
		Replicas:         t.Replicas,
		Revision:         "r1",
		Persistence:      t.Persistence,
		FsyncAlways:      t.FsyncAlways,
		MinSyncReplicas:  t.MinSyncReplicas,
		FailureThreshold: cmp.Or(t.FailureThreshold, failureThreshold),
		FenceTimeout:     fenceTimeout,
		StorageBytes:     1 << 30,
		RotationGrace:    rotationGrace,
	}
}
