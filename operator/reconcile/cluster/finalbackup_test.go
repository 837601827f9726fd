package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
)

// TestTheFinalBackupStartsOnlyOnceEveryPrimaryIsSeenClosed: the final backup of a deleted
// cluster may hold every acknowledged write only if it starts after the writes closed, so it is
// created only from a look of a Steady cluster in which every recorded primary answers, as the
// recorded process, closed to client writes; anything else says what is waited for.
func TestTheFinalBackupStartsOnlyOnceEveryPrimaryIsSeenClosed(t *testing.T) {
	primary := func(name, run string, closed bool) machine.Node {
		return machine.Node{Name: name, Reachable: true, Valkey: machine.Valkey{RunID: run, Role: machine.RolePrimary, WritesFenced: closed}}
	}
	rec := []machine.ShardRecord{{Primary: "a-0", RunID: "r0"}, {Primary: "b-0", RunID: "r1"}}
	look := func(state machine.State, nodes ...machine.Node) shared.Look {
		return shared.Look{At: time.Unix(1, 0), Next: machine.Persisted{State: state, Shards: rec}, Obs: machine.Observation{Nodes: nodes}}
	}
	for _, c := range []struct {
		name string
		look shared.Look
		want string // "" : the backup may start
	}{
		{"never surveyed", shared.Look{}, "not surveyed"},
		{"failing over", look(machine.FailingOver, primary("a-0", "r0", true), primary("b-0", "r1", true)), "FailingOver"},
		{"hibernated", look(machine.Hibernated), "spec.hibernate to false"},
		{"one primary still open", look(machine.Steady, primary("a-0", "r0", true), primary("b-0", "r1", false)), "closing client writes to shard 1's primary b-0"},
		{"a primary restarted since the record", look(machine.Steady, primary("a-0", "r9", true), primary("b-0", "r1", true)), "shard 0's primary a-0 does not answer"},
		{"a primary unseen", look(machine.Steady, primary("b-0", "r1", true)), "shard 0's primary a-0 does not answer"},
		{"every primary closed", look(machine.Steady, primary("a-0", "r0", true), primary("b-0", "r1", true)), ""},
	} {
		got := writesClosed(c.look)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: writesClosed says %q, want %q", c.name, got, c.want)
		}
	}
}
