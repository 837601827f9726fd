package machine

import "testing"

func TestAFailedActionBlocksOnlyTheActionsThatDependOnIt(t *testing.T) {
	promote := Promote{Target: Target{Node: "s0-1"}}
	cases := []struct {
		name   string
		a      Action
		failed []Action
		want   bool
	}{
		{"nothing failed", ReplicaOf{Target: Target{Node: "s0-2"}, Primary: "s0-1"}, nil, false},
		{"a replica pointed at the node whose promotion failed", ReplicaOf{Target: Target{Node: "s0-2"}, Primary: "s0-1"}, []Action{promote}, true},
		{"another replica-of, another node", ReplicaOf{Target: Target{Node: "s0-2"}, Primary: "s0-0"}, []Action{ReplicaOf{Target: Target{Node: "s0-1"}, Primary: "s0-0"}}, false},
		{"a later action on the same node", OpenWrites{Target: Target{Node: "s0-1"}}, []Action{promote}, true},
		{"objects are independent of nodes", EnsureObjects{Replicas: 2}, []Action{promote}, false},
		{"volumes are independent of objects", ExpandVolumes{Nodes: []string{"s0-1"}}, []Action{EnsureObjects{Replicas: 2}}, false},
		{"a failed fence blocks everything after it", Promote{Target: Target{Node: "s0-2"}}, []Action{Fence{Target: Target{Node: "s0-0"}}}, true},
		{"migrations into one shard run side by side", MigrateSlots{FromNode: "s1-0", ToNode: "s3-0"}, []Action{MigrateSlots{FromNode: "s0-0", ToNode: "s3-0"}}, false},
		{"a removal after a failed migration of its node", RemoveNode{Target: Target{Node: "s3-0"}}, []Action{MigrateSlots{FromNode: "s3-0", ToNode: "s0-0"}}, true},
		{"a hand-over's target", HandOver{From: "s0-0", To: "s0-1"}, []Action{Detach{Target: Target{Node: "s0-1"}}}, true},
	}
	for _, c := range cases {
		if got := Blocked(c.a, c.failed); got != c.want {
			t.Errorf("%s: Blocked = %v, want %v", c.name, got, c.want)
		}
	}
}
