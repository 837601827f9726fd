package valkey

import (
	"context"
	"testing"
)

// replicaPriority reads replica-priority from the node as the operator.
func replicaPriority(t *testing.T, s *server) string {
	t.Helper()
	c, err := userClient(s.ip, UserOperator, testPasswords.Operator)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.Do(context.Background(), c.B().ConfigGet().Parameter("replica-priority").Build()).AsStrMap()
	if err != nil {
		t.Fatalf("CONFIG GET replica-priority: %v", err)
	}
	return got["replica-priority"]
}

// TestReplicaPriorityFollowsTheReplicationUserInTheSentinelTopology, on real valkey-server
// processes: with the Sentinel topology, every action that turns the replication user off
// (ReplicaOf, Fence) sets replica-priority 0, so that Sentinel never promotes a node the
// operator has not opened, and every one that turns it on (OpenWrites on a replica, OpenSync,
// Promote) sets the default back; without the topology the priority is left alone.
func TestReplicaPriorityFollowsTheReplicationUserInTheSentinelTopology(t *testing.T) {
	ctx := context.Background()
	p := newTestPool(t)
	p.SetSentinelTopology(true)
	prim, repl := startServer(t, "127.78.72.1"), startServer(t, "127.78.72.2")
	openPrimary(t, p, prim)
	if got := replicaPriority(t, prim); got != "100" {
		t.Fatalf("a promoted node has replica-priority %s, want 100", got)
	}
	run := survey(t, p, repl).RunID
	steps := []struct {
		what string
		do   func() error
		want string
	}{
		{"ReplicaOf", func() error { return p.ReplicaOf(ctx, repl.ip, run, prim.ip, testPasswords.Replication) }, "0"},
		{"OpenWrites on the replica", func() error { return p.OpenWrites(ctx, repl.ip, run) }, "100"},
		{"Fence", func() error { return p.Fence(ctx, repl.ip, run) }, "0"},
		{"OpenSync", func() error { return p.OpenSync(ctx, repl.ip, run) }, "100"},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := replicaPriority(t, repl); got != s.want {
			t.Fatalf("after %s replica-priority is %s, want %s", s.what, got, s.want)
		}
	}

	// Another topology's actions leave it as it is.
	q := newTestPool(t)
	other := startServer(t, "127.78.72.3")
	if err := q.ReplicaOf(ctx, other.ip, survey(t, q, other).RunID, prim.ip, testPasswords.Replication); err != nil {
		t.Fatal(err)
	}
	if got := replicaPriority(t, other); got != "100" {
		t.Fatalf("ReplicaOf outside the Sentinel topology set replica-priority %s", got)
	}
}
