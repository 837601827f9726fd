package cluster

import (
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
)

func node(shard int, exists, reachable bool, version string) machine.Node {
	n := machine.Node{Shard: shard, Reachable: reachable}
	n.Pod.Exists = exists
	n.Valkey.Version = version
	return n
}

// status.replicas counts like spec.replicas (a shard's pods but its primary), and with shards
// that differ it is the fewest: the scale subresource's current count.
func TestReplicasNowCountsReplicasOfTheSmallestShard(t *testing.T) {
	for _, c := range []struct {
		name   string
		nodes  []machine.Node
		shards int
		want   int32
	}{
		{"primary and two replicas", []machine.Node{node(0, true, true, ""), node(0, true, true, ""), node(0, true, false, "")}, 1, 2},
		{"a pod not created yet", []machine.Node{node(0, true, true, ""), node(0, false, false, "")}, 1, 0},
		{"standalone", []machine.Node{node(0, true, true, "")}, 1, 0},
		{"no pod (hibernated)", []machine.Node{node(0, false, false, ""), node(0, false, false, "")}, 1, 0},
		{"shards differ", []machine.Node{node(0, true, true, ""), node(0, true, true, ""), node(0, true, true, ""), node(1, true, true, ""), node(1, true, true, "")}, 2, 1},
		{"a shard beyond the spec's count is not counted", []machine.Node{node(0, true, true, ""), node(0, true, true, ""), node(1, true, true, "")}, 1, 1},
		{"a shard with no pod", []machine.Node{node(0, true, true, ""), node(0, true, true, "")}, 2, 0},
	} {
		if got := replicasNow(c.nodes, c.shards); got != c.want {
			t.Errorf("%s: replicasNow = %d, want %d", c.name, got, c.want)
		}
	}
}

// status.valkeyVersion is the version the servers report, and during a roll every version,
// oldest first, whatever order the nodes are in.
func TestVersionsSeenOldestFirst(t *testing.T) {
	for _, c := range []struct {
		name  string
		nodes []machine.Node
		want  string
	}{
		{"one version", []machine.Node{node(0, true, true, "8.0.2"), node(0, true, true, "8.0.2")}, "8.0.2"},
		{"a roll", []machine.Node{node(0, true, true, "9.1.0"), node(0, true, true, "8.0.2"), node(0, true, true, "9.1.0")}, "8.0.2,9.1.0"},
		{"numbers, not text", []machine.Node{node(0, true, true, "9.1.10"), node(0, true, true, "9.1.2"), node(0, true, true, "10.0.0")}, "9.1.2,9.1.10,10.0.0"},
		{"an unreachable node keeps no version", []machine.Node{node(0, true, true, "8.0.2"), node(0, true, false, "9.1.0")}, "8.0.2"},
		{"nothing answers", []machine.Node{node(0, true, false, "")}, ""},
	} {
		if got := versionsSeen(c.nodes); got != c.want {
			t.Errorf("%s: versionsSeen = %q, want %q", c.name, got, c.want)
		}
	}
}
