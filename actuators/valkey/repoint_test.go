package valkey

import (
	"context"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestADetachedReplicaRepointedByATakeoverSyncsAgain: a shard of three cluster nodes fails over
// as the machine does it: both replicas are detached (their replication password replaced, so
// their data stops moving), one is promoted with CLUSTER FAILOVER TAKEOVER. Valkey re-points
// the other replica to the new primary by itself (it followed the old one), so the replica-of
// that the machine then decides finds it already following the right node. It must still give
// the replication password back: found by the cluster failover benchmark, where the replica
// kept the detached password, never synced, and the new primary refused every write
// (NOREPLICAS, min-replicas-to-write 1) for as long as the old primary's host was down, while
// the operator repeated replica-of without end.
func TestADetachedReplicaRepointedByATakeoverSyncsAgain(t *testing.T) {
	p := newTestPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prim, r1, r2 := startClusterServer(t, "127.78.4.1", ""), startClusterServer(t, "127.78.4.2", ""), startClusterServer(t, "127.78.4.3", "")
	runID := func(s *server) string { return survey(t, p, s).RunID }
	for _, s := range []*server{r1, r2} {
		if err := p.Meet(ctx, s.ip, runID(s), prim.ip); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.AssignSlots(ctx, prim.ip, runID(prim), []machine.SlotRange{{Start: 0, End: machine.NumSlots - 1}}); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(ctx, prim.ip, runID(prim)); err != nil {
		t.Fatal(err)
	}
	following := func(s, primary *server) bool {
		v := survey(t, p, s)
		return v.Role == machine.RoleReplica && v.PrimaryHost == primary.ip && v.LinkUp
	}
	for _, s := range []*server{r1, r2} {
		eventually(t, s.ip+" knows the primary serves every slot", func() bool {
			v, err := p.ClusterNodes(ctx, s.ip)
			if err != nil {
				return false
			}
			for _, n := range v.Nodes {
				if n.IP == prim.ip && len(n.Slots) == 1 {
					return true
				}
			}
			return false
		})
		if err := p.Replicate(ctx, s.ip, runID(s), prim.ip, runID(prim), testPasswords.Replication); err != nil {
			t.Fatal(err)
		}
		eventually(t, s.ip+" in sync with the primary", func() bool { return following(s, prim) })
	}

	// The failover: both replicas detached, r1 takes over.
	for _, s := range []*server{r1, r2} {
		if err := p.Detach(ctx, s.ip, runID(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Promote(ctx, r1.ip, runID(r1)); err != nil {
		t.Fatal(err)
	}
	r1ID, err := p.ClusterNodes(ctx, r1.ip)
	if err != nil {
		t.Fatal(err)
	}
	me, _ := r1ID.Myself()
	eventually(t, "r2 re-pointed to r1 by Valkey itself", func() bool {
		v, err := p.ClusterNodes(ctx, r2.ip)
		if err != nil {
			return false
		}
		mine, _ := v.Myself()
		return mine.PrimaryID == me.ID
	})
	if err := p.Replicate(ctx, r2.ip, runID(r2), r1.ip, runID(r1), testPasswords.Replication); err != nil {
		t.Fatal(err)
	}
	eventually(t, "r2 in sync with r1 after replica-of", func() bool { return following(r2, r1) })
}
