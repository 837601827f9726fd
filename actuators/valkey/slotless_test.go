package valkey

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// What real Valkey (8.0 and 9.1, cluster-allow-replica-migration no, as the operator runs it)
// does to a primary that was away while a newer claim took all of its slots. The simulated
// cluster bus (machine/sim/bus.go) models the answer; clusterUpdateSlotsConfigWith in
// src/cluster_legacy.c is the code: a node whose shard is left without slots becomes the
// sender's replica when replica migration is allowed or the sender is in its own shard.
//
// The three nodes: a (primary of slots 0-999, with keys), b (a's replica) and c (primary of
// 1000-16000); 16001-16383 stay free (full coverage is not required, so clients can write).
// a is stopped (SIGSTOP) while its slots go elsewhere, then runs again.

// TestAPrimaryWhoseReplicaTookItsSlotsFollowsIt: b takes a's slots over (CLUSTER FAILOVER
// TAKEOVER) while a is stopped. Found: a, running again, hears b's newer claim and becomes b's
// replica; so it does when b claimed more slots than a's since (the sender's claim is not
// exactly the slots it took from a): the condition is the shard, not the slot set.
func TestAPrimaryWhoseReplicaTookItsSlotsFollowsIt(t *testing.T) {
	bins := valkeyBinaries(t)
	for i, version := range []string{"8.0", "9.1"} {
		for j, wider := range []bool{false, true} {
			name := version + "/exactly-its-slots"
			if wider {
				name = version + "/more-slots"
			}
			t.Run(name, func(t *testing.T) {
				sub := "127.78." + strconv.Itoa(40+2*i+j) + "."
				s := slotlessSetUp(t, bins[version], sub)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				s.stopA(t)
				if err := s.p.Promote(ctx, s.b.ip, survey(t, s.p, s.b).RunID); err != nil {
					t.Fatal(err)
				}
				want := 1000
				if wider {
					s.do(t, s.b, "CLUSTER", "ADDSLOTSRANGE", "16001", "16383")
					want += 383
				}
				var seen string
				eventually(t, s.c.ip+" sees "+s.b.ip+" serve a's slots", func() bool {
					vb := survey(t, s.p, s.b)
					seen = fmt.Sprintf("owner of slot 0 for c %s, for b %s; b a %s of %d slots",
						ownerIn(t, ctx, s.p, s.c, 0), ownerIn(t, ctx, s.p, s.b, 0), vb.Role, machine.SlotCount(vb.Slots))
					return ownerIn(t, ctx, s.p, s.c, 0) == s.b.ip && ownerIn(t, ctx, s.p, s.b, 0) == s.b.ip &&
						machine.SlotCount(vb.Slots) == want
				}, &seen)
				s.resumeA(t)
				s.eventuallyAFollowsB(t, ctx)
			})
		}
	}
}

// TestAPrimaryWhoseSlotsWentToAnotherShardStaysAPrimary: c, of another shard, takes a's slots
// (CLUSTER SETSLOT NODE, then BUMPEPOCH for a newer claim) while a is stopped. Found: a, running
// again, drops the slots and stays a primary serving none; b stays its replica. 8.0 keeps the
// keys of the slots it lost; 9.1 deletes them (the dirty slots of clusterUpdateSlotsConfigWith),
// so that a's key count is 0 there.
func TestAPrimaryWhoseSlotsWentToAnotherShardStaysAPrimary(t *testing.T) {
	bins := valkeyBinaries(t)
	for i, version := range []string{"8.0", "9.1"} {
		t.Run(version, func(t *testing.T) {
			s := slotlessSetUp(t, bins[version], "127.78."+strconv.Itoa(44+i)+".")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			keys := survey(t, s.p, s.a).Keys
			s.stopA(t)
			cID := myID(t, ctx, s.p, s.c)
			cl, err := s.p.client(Addr(s.c.ip))
			if err != nil {
				t.Fatal(err)
			}
			cmds := make(vk.Commands, 0, 1000)
			for slot := 0; slot < 1000; slot++ {
				cmds = append(cmds, cl.B().Arbitrary("CLUSTER", "SETSLOT").Args(strconv.Itoa(slot), "NODE", cID).Build())
			}
			for _, r := range cl.DoMulti(ctx, cmds...) {
				if err := r.Error(); err != nil {
					t.Fatal(err)
				}
			}
			s.do(t, s.c, "CLUSTER", "BUMPEPOCH")
			s.resumeA(t)
			var seen string
			eventuallyLong(t, s.a.ip+" sees "+s.c.ip+" serve its former slots", func() bool {
				v, err := s.p.Survey(ctx, s.a.ip)
				seen = fmt.Sprintf("role %s, %d slots, owner of slot 0 %s", v.Role, machine.SlotCount(v.Slots), ownerIn(t, ctx, s.p, s.a, 0))
				return err == nil && len(v.Slots) == 0 && ownerIn(t, ctx, s.p, s.a, 0) == s.c.ip
			}, &seen)
			time.Sleep(2 * time.Second) // a few bus rounds: a role change would have come with the slots
			want := keys
			if version != "8.0" {
				want = 0
			}
			v := survey(t, s.p, s.a)
			if v.Role != machine.RolePrimary || v.Keys != want {
				t.Fatalf("%s: role %s, %d keys (had %d): want a primary with %d", s.a.ip, v.Role, v.Keys, keys, want)
			}
			if vb := survey(t, s.p, s.b); vb.Role != machine.RoleReplica || vb.PrimaryHost != s.a.ip {
				t.Fatalf("%s: role %s following %q: want a's replica still", s.b.ip, vb.Role, vb.PrimaryHost)
			}
		})
	}
}

type slotlessCluster struct {
	p       *Pool
	a, b, c *server
	stopped bool
}

// slotlessSetUp starts a, b and c at sub+1..3 as the tests above describe, a holding keys that
// b has replicated.
func slotlessSetUp(t *testing.T, bin, sub string) *slotlessCluster {
	t.Helper()
	const extra = "cluster-require-full-coverage no\n"
	s := &slotlessCluster{p: newTestPool(t)}
	s.a = startClusterServerWith(t, sub+"1", bin, extra+"appendonly yes\nappendfsync always\n")
	s.b = startClusterServerWith(t, sub+"2", bin, extra)
	s.c = startClusterServerWith(t, sub+"3", bin, extra)
	t.Cleanup(func() {
		if s.stopped {
			_ = syscall.Kill(s.a.cmd.Process.Pid, syscall.SIGCONT)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := s.p
	runID := func(n *server) string { return survey(t, p, n).RunID }
	for _, n := range []*server{s.b, s.c} {
		if err := p.Meet(ctx, n.ip, runID(n), s.a.ip); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.AssignSlots(ctx, s.a.ip, runID(s.a), []machine.SlotRange{{Start: 0, End: 999}}); err != nil {
		t.Fatal(err)
	}
	if err := p.AssignSlots(ctx, s.c.ip, runID(s.c), []machine.SlotRange{{Start: 1000, End: 16000}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every node sees 16001 slots served", func() bool {
		for _, n := range []*server{s.a, s.b, s.c} {
			if v, err := p.Survey(ctx, n.ip); err != nil || v.SlotsSeen != 16001 {
				return false
			}
		}
		return true
	})
	if err := p.Replicate(ctx, s.b.ip, runID(s.b), s.a.ip, runID(s.a), testPasswords.Replication); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*server{s.a, s.c} {
		if err := p.OpenWrites(ctx, n.ip, runID(n)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "cluster_state ok", func() bool {
		v, err := p.Survey(ctx, s.a.ip)
		return err == nil && v.ClusterOK
	})
	var epochs string
	eventuallyLong(t, "the primaries' epochs settled in every view", func() bool {
		return s.epochsSettled(ctx, &epochs, false)
	}, &epochs)
	// b's takeover below bumps its epoch only when its own, which is a's, is not the greatest
	// it knows (CLUSTER FAILOVER TAKEOVER, clusterBumpConfigEpochWithoutConsensus). When the
	// collision handling bumped a rather than c, b would claim a's slots with a's own epoch,
	// which the others refuse while a is away: c then takes a newer epoch, so that the takeover
	// is the newest claim whichever primary the collision bumped.
	if err := p.run(ctx, Addr(s.c.ip), func(ctx context.Context, cl vk.Client) error {
		for _, r := range cl.DoMulti(ctx, bumpEpoch(cl)...) {
			if err := r.Error(); err != nil && !strings.Contains(err.Error(), "STILL") {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	eventuallyLong(t, "c's epoch above a's in every view", func() bool {
		return s.epochsSettled(ctx, &epochs, true)
	}, &epochs)
	cl, err := vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(s.a.ip)}, Password: testPasswords.Client, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cmds := make(vk.Commands, 0, 3000)
	for k := 0; k < 3000; k++ {
		cmds = append(cmds, cl.B().Set().Key("slotless:"+strconv.Itoa(k)).Value("v").Build())
	}
	written := 0
	for _, r := range cl.DoMulti(ctx, cmds...) {
		if r.Error() == nil { // a key of another node's slot is MOVED
			written++
		}
	}
	keys := survey(t, p, s.a).Keys
	if keys == 0 || keys != int64(written) {
		t.Fatalf("a holds %d keys, %d written", keys, written)
	}
	eventually(t, "b holds a's keys", func() bool {
		v, err := p.Survey(ctx, s.b.ip)
		return err == nil && v.Keys == keys && v.LinkUp
	})
	return s
}

// epochsSettled reports whether every node knows the same current epoch and sees a and c,
// the primaries, with distinct config epochs (c's the greater, with cAboveA). Two primaries
// start with epoch 0, and Valkey bumps one of them when they meet (its epoch collision
// handling); a takeover by b before b heard of that bump would claim a's slots with an epoch
// no newer than a's, which the others refuse.
func (s *slotlessCluster) epochsSettled(ctx context.Context, seen *string, cAboveA bool) bool {
	var current []string
	for _, n := range []*server{s.a, s.b, s.c} {
		cl, err := s.p.client(Addr(n.ip))
		if err != nil {
			*seen = err.Error()
			return false
		}
		text, err := cl.Do(ctx, cl.B().ClusterInfo().Build()).ToString()
		if err != nil {
			*seen = err.Error()
			return false
		}
		current = append(current, parseInfo(text)["cluster_current_epoch"])
		v, err := s.p.ClusterNodes(ctx, n.ip)
		if err != nil {
			*seen = err.Error()
			return false
		}
		var ea, ec uint64
		for _, k := range v.Nodes {
			switch k.IP {
			case s.a.ip:
				ea = k.ConfigEpoch
			case s.c.ip:
				ec = k.ConfigEpoch
			}
		}
		*seen = fmt.Sprintf("current epochs %v; %s sees a at %d, c at %d", current, n.ip, ea, ec)
		if ea == ec || cAboveA && ec < ea {
			return false
		}
	}
	return current[0] == current[1] && current[1] == current[2]
}

func (s *slotlessCluster) stopA(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(s.a.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	s.stopped = true
}

func (s *slotlessCluster) resumeA(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(s.a.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	s.stopped = false
}

// do runs one command on n as the operator.
func (s *slotlessCluster) do(t *testing.T, n *server, args ...string) {
	t.Helper()
	cl, err := s.p.client(Addr(n.ip))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Do(context.Background(), cl.B().Arbitrary(args...).Build()).Error(); err != nil {
		t.Fatalf("%v on %s: %v", args, n.ip, err)
	}
}

// killAAndTakeOver kills a and promotes b, its replica, in its place (CLUSTER FAILOVER
// TAKEOVER), until c sees b serve a's slots.
func (s *slotlessCluster) killAAndTakeOver(t *testing.T, ctx context.Context) {
	t.Helper()
	_ = s.a.cmd.Process.Kill()
	_ = s.a.cmd.Wait()
	if err := s.p.Promote(ctx, s.b.ip, survey(t, s.p, s.b).RunID); err != nil {
		t.Fatal(err)
	}
	var seen string
	eventually(t, s.c.ip+" sees "+s.b.ip+" serve a's slots", func() bool {
		v, err := s.p.ClusterNodes(ctx, s.c.ip)
		seen = fmt.Sprintf("%v %+v", err, v.Nodes)
		return ownerIn(t, ctx, s.p, s.c, 0) == s.b.ip
	}, &seen)
}

// eventuallyAFollowsB waits until a answers as b's replica serving no slots.
func (s *slotlessCluster) eventuallyAFollowsB(t *testing.T, ctx context.Context) {
	t.Helper()
	var seen string
	eventuallyLong(t, s.a.ip+" follows "+s.b.ip, func() bool {
		v, err := s.p.Survey(ctx, s.a.ip)
		seen = fmt.Sprintf("role %s, following %q, %d slots", v.Role, v.PrimaryHost, machine.SlotCount(v.Slots))
		return err == nil && v.Role == machine.RoleReplica && v.PrimaryHost == s.b.ip && len(v.Slots) == 0
	}, &seen)
}

// eventuallyLong is eventually over 30 s: a stopped node's peers time its links out first.
func eventuallyLong(t testing.TB, what string, f func() bool, detail ...*string) {
	t.Helper()
	eventuallyWithin(t, 30*time.Second, 100*time.Millisecond, what, f, detail...)
}

// TestAPrimaryBackOnANewAddressFollowsItsReplica: a is killed, b takes its slots over, and a
// restarts from its nodes.conf on another address (a pod re-created on a new IP). Found: the
// address makes no difference, a becomes b's replica.
func TestAPrimaryBackOnANewAddressFollowsItsReplica(t *testing.T) {
	bins := valkeyBinaries(t)
	for i, version := range []string{"8.0", "9.1"} {
		t.Run(version, func(t *testing.T) {
			sub := "127.78." + strconv.Itoa(46+i) + "."
			s := slotlessSetUp(t, bins[version], sub)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s.killAAndTakeOver(t, ctx)
			moveTo(t, s.a, sub+"4")
			s.a.start(t)
			s.eventuallyAFollowsB(t, ctx)
		})
	}
}

// moveTo rewrites s's configuration for the address ip (bind, cluster-announce-ip).
func moveTo(t *testing.T, s *server, ip string) {
	t.Helper()
	conf := filepath.Join(s.dir, "valkey.conf")
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte(strings.ReplaceAll(string(b), s.ip+"\n", ip+"\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	s.ip = ip
}

// TestAPrimaryRestartedWithoutItsShardIDStaysAPrimary: as above, a restarted in place (from its
// append-only file), but as the operator's pods start: ClusterStartScript removes the shard ids
// from nodes.conf, so a takes a new one. Found: a stays a primary serving none; 8.0 keeps its
// keys, 9.1 deletes them (every one was in the slots it lost), though b, the new owner, may be
// the node that lost its data.
func TestAPrimaryRestartedWithoutItsShardIDStaysAPrimary(t *testing.T) {
	bins := valkeyBinaries(t)
	for i, version := range []string{"8.0", "9.1"} {
		t.Run(version, func(t *testing.T) {
			sub := "127.78." + strconv.Itoa(48+i) + "."
			s := slotlessSetUp(t, bins[version], sub)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			keys := survey(t, s.p, s.a).Keys
			s.killAAndTakeOver(t, ctx)
			nodes := filepath.Join(s.a.dir, "nodes.conf")
			b, err := os.ReadFile(nodes)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(nodes, regexp.MustCompile(`,shard-id=[0-9a-f]*`).ReplaceAll(b, nil), 0o600); err != nil {
				t.Fatal(err)
			}
			s.a.start(t)
			var seen string
			eventuallyLong(t, s.a.ip+" drops its slots", func() bool {
				v, err := s.p.Survey(ctx, s.a.ip)
				seen = fmt.Sprintf("role %s, following %q, %d slots, %d keys", v.Role, v.PrimaryHost, machine.SlotCount(v.Slots), v.Keys)
				return err == nil && len(v.Slots) == 0 && ownerIn(t, ctx, s.p, s.a, 0) == s.b.ip
			}, &seen)
			time.Sleep(2 * time.Second) // a few bus rounds: a role change would have come with the slots
			want := keys
			if version != "8.0" {
				want = 0
			}
			if v := survey(t, s.p, s.a); v.Role != machine.RolePrimary || v.Keys != want {
				t.Fatalf("%s: role %s following %q, %d keys (had %d): want a primary with %d", s.a.ip, v.Role, v.PrimaryHost, v.Keys, keys, want)
			}
		})
	}
}
