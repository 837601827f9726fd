package valkey

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestARemovedPrimaryRedirectsItsClientsUntilTheyMovedOn: a primary whose slots moved away is
// removed from the cluster while a client that has not refreshed its slot map yet keeps
// writing to it. The node goes on answering MOVED (to the slots' new owner) for as long as the
// client keeps coming, never "CLUSTERDOWN Hash slot not served" (what a node reset at once
// answers), and is reset only once the client stopped. A client that never stops holds the
// removal for RedirectionDrainMax at most.
func TestARemovedPrimaryRedirectsItsClientsUntilTheyMovedOn(t *testing.T) {
	c := newBenchCluster(t, "", 10, 100)
	defer c.stopAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	primaries := c.ips()
	plan := machine.SlotPlan(3)
	// Shards 1 and 2 give their slots to shard 0 (classic migration: this is Valkey 8.0).
	for _, from := range []int{1, 2} {
		staleKey(t, ctx, c.nodes[from], plan[from]) // before the move: the node still answers for it
		epochsParted(t, ctx, c.p, primaries...)
		for {
			res, err := c.p.MigrateSlots(ctx, c.nodes[from].ip, "", c.nodes[0].ip, plan[from], primaries, false, testPasswords.Operator, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if res.SlotsLeft == 0 {
				break
			}
		}
	}
	var seen string // what the last look found, for the failure message
	eventually(t, "every node sees shard 0 serve every slot", func() bool {
		for _, s := range c.nodes {
			v, err := c.p.ClusterNodes(ctx, s.ip)
			if err != nil {
				seen = fmt.Sprintf("%s: %v", s.ip, err)
				return false
			}
			for _, n := range v.Nodes {
				if n.IP == c.nodes[0].ip && machine.SlotCount(n.Slots) != machine.NumSlots {
					seen = fmt.Sprintf("%s's view: %+v", s.ip, v.Nodes)
					return false
				}
			}
		}
		return true
	}, &seen)
	peers := func(except string) []string {
		var out []string
		for _, ip := range primaries {
			if ip != except {
				out = append(out, ip)
			}
		}
		return out
	}

	// A client that refreshes 1.5 s into the removal.
	stale := c.nodes[1]
	key := staleKey(t, ctx, stale, plan[1])
	replies := writeUntil(t, ctx, stale, key, 1500*time.Millisecond)
	start := time.Now()
	redirected(t, ctx, c.p, stale)
	if err := c.p.RemoveFromCluster(ctx, stale.ip, peers(stale.ip)); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	time.Sleep(time.Until(start.Add(1500 * time.Millisecond))) // the client's own end
	got := replies()
	if bad := notMoved(got); len(bad) > 0 {
		t.Fatalf("the client writing to the node being removed was answered %q and %d more not MOVED (of %d replies): it must be redirected until it moved on", bad[0], len(bad)-1, len(got))
	}
	if took < 1500*time.Millisecond || len(got) < 10 {
		t.Fatalf("removal took %s with %d replies to the stale client: it did not wait for the client to stop redirecting", took, len(got))
	}
	if v := survey(t, c.p, stale); v.Joined {
		t.Fatalf("%s is still joined after its removal", stale.ip)
	}

	// A client that never refreshes holds the removal for RedirectionDrainMax, not longer.
	stuck := c.nodes[2]
	key = staleKey(t, ctx, stuck, plan[2])
	replies = writeUntil(t, ctx, stuck, key, time.Minute)
	redirected(t, ctx, c.p, stuck)
	start = time.Now()
	if err := c.p.RemoveFromCluster(ctx, stuck.ip, peers(stuck.ip)); err != nil {
		t.Fatal(err)
	}
	took = time.Since(start)
	replies()
	if took > RedirectionDrainMax+3*time.Second {
		t.Fatalf("a client that never refreshes held the removal for %s (RedirectionDrainMax %s)", took, RedirectionDrainMax)
	}
	if v := survey(t, c.p, stuck); v.Joined {
		t.Fatalf("%s is still joined after its removal", stuck.ip)
	}
	t.Logf("removal with a client refreshing after 1.5 s: every reply MOVED; with a client that never does: %s", took.Round(100*time.Millisecond))
}

// redirected waits until s has answered a MOVED (the stale client has been at it).
func redirected(t *testing.T, ctx context.Context, p *Pool, s *server) {
	t.Helper()
	eventually(t, s.ip+" answers MOVED", func() bool {
		n, err := p.redirections(ctx, s.ip)
		return err == nil && n > 0
	})
}

// staleKey is a key whose slot is in r, as the node s computes it (CLUSTER KEYSLOT).
func staleKey(t *testing.T, ctx context.Context, s *server, r machine.SlotRange) string {
	t.Helper()
	cl := staleClient(t, s)
	defer cl.Close()
	for i := 0; i < 10_000; i++ {
		k := fmt.Sprintf("stale:%d", i)
		slot, err := cl.Do(ctx, cl.B().ClusterKeyslot().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if int(slot) >= r.Start && int(slot) <= r.End {
			return k
		}
	}
	t.Fatalf("no key in slots %v", r)
	return ""
}

// staleClient is a plain (not cluster-aware) application connection to s: a client whose slot
// map says s serves the key, sending there whatever the answer.
func staleClient(t *testing.T, s *server) vk.Client {
	t.Helper()
	cl, err := vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(s.ip)}, Password: testPasswords.Client, ForceSingleClient: true, DisableCache: true, DisableRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// writeUntil writes key to s every 10 ms for d (or until the test ends) and returns a function
// that stops it and gives the replies: "OK" or the error's text.
func writeUntil(t *testing.T, ctx context.Context, s *server, key string, d time.Duration) func() []string {
	t.Helper()
	cl := staleClient(t, s)
	var mu sync.Mutex
	var out []string
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cl.Close()
		end := time.After(d)
		for {
			select {
			case <-stop:
				return
			case <-end:
				return
			case <-time.After(10 * time.Millisecond):
			}
			reply := "OK"
			if err := cl.Do(ctx, cl.B().Set().Key(key).Value("v").Build()).Error(); err != nil {
				reply = err.Error()
			}
			mu.Lock()
			out = append(out, reply)
			mu.Unlock()
		}
	}()
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(stop) }); <-done })
	return func() []string {
		once.Do(func() { close(stop) })
		<-done
		mu.Lock()
		defer mu.Unlock()
		return out
	}
}

// notMoved lists the replies that are not a MOVED redirection.
func notMoved(replies []string) []string {
	var bad []string
	for _, r := range replies {
		if !strings.HasPrefix(r, "MOVED ") {
			bad = append(bad, r)
		}
	}
	return bad
}

// TestARemovedPrimaryIsDrainedAndResetAlthoughItsReplicaLeavesWithIt: a shard that goes away
// has a primary, whose slots moved away, and a replica of it; the machine removes both in the
// same turn, the primary listed first. The replica refuses to forget its own primary ("Can't
// forget my master!"), which once failed the primary's removal after every other node had
// forgotten it: the primary was never drained nor reset, and its pod was stopped under a
// client still sent there by a stale slot map, which met a closed connection (EOF) where a
// MOVED was due (found on real Valkey 9.1 in a 5 → 3 resharding). Here the removal succeeds,
// the stale client is answered MOVED until it stops, and the primary leaves the bus (it knows
// no other node); then the replica's own removal resets it too.
func TestARemovedPrimaryIsDrainedAndResetAlthoughItsReplicaLeavesWithIt(t *testing.T) {
	c := newBenchCluster(t, "", 11, 100)
	defer c.stopAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	plan := machine.SlotPlan(3)
	leaving, replica := c.nodes[2], c.nodes[3]
	all := c.ips()
	staleKey(t, ctx, leaving, plan[2]) // before the move: the node still answers for it
	for {
		res, err := c.p.MigrateSlots(ctx, leaving.ip, "", c.nodes[0].ip, plan[2], all[:3], false, testPasswords.Operator, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.SlotsLeft == 0 {
			break
		}
	}
	var seen string
	eventually(t, "no node gives "+leaving.ip+" a slot", func() bool {
		for _, s := range c.nodes {
			v, err := c.p.ClusterNodes(ctx, s.ip)
			if err != nil {
				seen = fmt.Sprintf("%s: %v", s.ip, err)
				return false
			}
			for _, n := range v.Nodes {
				if n.IP == leaving.ip && len(n.Slots) > 0 {
					seen = fmt.Sprintf("%s's view: %+v", s.ip, v.Nodes)
					return false
				}
			}
		}
		return true
	}, &seen)
	// The replica follows it once its slots are gone (a classic migration's SETSLOT waits for
	// the source's replicas; what matters here is that the replica is there at the removal).
	if err := c.p.Replicate(ctx, replica.ip, survey(t, c.p, replica).RunID, leaving.ip, "", testPasswords.Replication); err != nil {
		t.Fatal(err)
	}
	eventually(t, replica.ip+" replicates "+leaving.ip, func() bool {
		v := survey(t, c.p, replica)
		return v.Role == machine.RoleReplica && v.LinkUp
	})
	others := func(except string) []string {
		var out []string
		for _, ip := range all {
			if ip != except {
				out = append(out, ip)
			}
		}
		return out
	}

	key := staleKey(t, ctx, leaving, plan[2])
	replies := writeUntil(t, ctx, leaving, key, 1500*time.Millisecond)
	start := time.Now()
	redirected(t, ctx, c.p, leaving)
	if err := c.p.RemoveFromCluster(ctx, leaving.ip, others(leaving.ip)); err != nil {
		t.Fatalf("removing the primary whose replica leaves with it: %v", err)
	}
	took := time.Since(start)
	time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
	got := replies()
	if bad := notMoved(got); len(bad) > 0 {
		t.Fatalf("the client writing to the primary being removed was answered %q and %d more not MOVED (of %d replies)", bad[0], len(bad)-1, len(got))
	}
	if took < 1500*time.Millisecond {
		t.Fatalf("removal took %s: it did not wait for the stale client to stop being redirected", took)
	}
	if v := survey(t, c.p, leaving); v.Joined || len(v.Known) > 0 {
		t.Fatalf("%s still knows %d node(s) after its removal (joined %v): it was not reset", leaving.ip, len(v.Known), v.Joined)
	}

	if err := c.p.RemoveFromCluster(ctx, replica.ip, others(replica.ip)); err != nil {
		t.Fatalf("removing the replica: %v", err)
	}
	if v := survey(t, c.p, replica); v.Joined || len(v.Known) > 0 || v.Role != machine.RolePrimary {
		t.Fatalf("%s after its removal: role %s, knows %d node(s): it was not reset", replica.ip, v.Role, len(v.Known))
	}
	for _, s := range c.nodes[:2] {
		v, err := c.p.ClusterNodes(ctx, s.ip)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range v.Nodes {
			if n.IP == leaving.ip || n.IP == replica.ip {
				t.Fatalf("%s still knows %s after both removals", s.ip, n.IP)
			}
		}
	}
}
