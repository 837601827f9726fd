package backup

import (
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
)

func TestSourcesPreferAReplicaInSync(t *testing.T) {
	node := func(shard, ord int, role machine.Role) machine.Node {
		n := machine.Node{Name: "s" + string(rune('0'+shard)) + "-" + string(rune('0'+ord)), Shard: shard, Ordinal: ord, Reachable: true}
		n.Pod.IP = "10.0." + string(rune('0'+shard)) + "." + string(rune('1'+ord))
		n.Valkey.Role, n.Valkey.RunID = role, "run-"+n.Name
		return n
	}
	following := func(n machine.Node, prim machine.Node, link, heard bool) machine.Node {
		n.Valkey.PrimaryHost, n.Valkey.LinkUp, n.Valkey.HeardFromPrimary = prim.Pod.IP, link, heard
		return n
	}
	p0, p1 := node(0, 0, machine.RolePrimary), node(1, 1, machine.RolePrimary)
	p1.Valkey.Slots = []machine.SlotRange{{Start: 8192, End: 16383}}
	obs := machine.Observation{Nodes: []machine.Node{
		p0,
		following(node(0, 1, machine.RoleReplica), p0, true, false), // link up, not heard lately
		following(node(0, 2, machine.RoleReplica), p0, true, true),
		following(node(1, 0, machine.RoleReplica), p1, false, false), // link down
		p1,
	}}
	recs := []machine.ShardRecord{{Primary: "s0-0", RunID: "run-s0-0"}, {Primary: "s1-1", RunID: "run-s1-1"}}
	got, err := Sources(obs, recs, "replication", "pw")
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Node != "s0-2" || got[0].Addr != "10.0.0.3:6379" {
		t.Errorf("shard 0 from %s (%s), want s0-2, the replica in sync", got[0].Node, got[0].Addr)
	}
	if got[1].Node != "s1-1" || len(got[1].Slots) != 1 || got[1].Slots[0].Start != 8192 {
		t.Errorf("shard 1 from %s with slots %v, want its primary s1-1 (no replica in sync) and its slots", got[1].Node, got[1].Slots)
	}
	recs[1].RunID = "a-process-gone"
	if _, err := Sources(obs, recs, "replication", "pw"); err == nil || !strings.Contains(err.Error(), "shard 1") {
		t.Errorf("a recorded primary that restarted: %v, want shard 1 refused", err)
	}
}
