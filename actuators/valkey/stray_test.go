package valkey

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestAFormerPrimaryBackAfterATakeoverKeepsItsKeysUntilElected plays on real Valkey 8.0 and
// 9.1 the schedule that the simulator found stranding a shard's slots:
//
//   - a shard of two nodes, a (primary, append-only file) and b (its replica), holds keys;
//   - a is killed, b takes its slots over (CLUSTER FAILOVER TAKEOVER, the machine's Promote);
//   - a restarts from its append-only file and nodes.conf;
//   - b restarts empty (no persistence) from its nodes.conf, still serving every slot.
//
// Found here: a comes back as b's replica (Valkey re-points a primary whose slots went to its own
// replica), holding its keys; the start-up fence (b's replication user off) keeps the empty b
// from wiping them. The machine then elects a for its data and promotes it (TAKEOVER takes b's
// slots); b follows a. Every key written before reads back through a cluster client, and
// valkey-cli --cluster check (an independent oracle) finds every slot covered and every node
// agreeing. (On the local Kubernetes cluster a returning primary came back as a primary
// without slots instead: the pods' start script removes the shard ids from nodes.conf, and
// Valkey re-points only a node of the new owner's shard id; see slotless_test.go.)
func TestAFormerPrimaryBackAfterATakeoverKeepsItsKeysUntilElected(t *testing.T) {
	bins := valkeyBinaries(t)
	for i, version := range []string{"8.0", "9.1"} {
		t.Run(version, func(t *testing.T) {
			formerPrimaryBack(t, bins[version], "127.78."+strconv.Itoa(5+i)+".")
		})
	}
}

func formerPrimaryBack(t *testing.T, bin string, subnet string) {
	p := newTestPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := startClusterServerWith(t, subnet+"1", bin, "appendonly yes\nappendfsync always\n")
	b := startClusterServer(t, subnet+"2", bin)
	runID := func(s *server) string { return survey(t, p, s).RunID }
	if err := p.Meet(ctx, b.ip, runID(b), a.ip); err != nil {
		t.Fatal(err)
	}
	all := []machine.SlotRange{{Start: 0, End: machine.NumSlots - 1}}
	if err := p.AssignSlots(ctx, a.ip, runID(a), all); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(ctx, a.ip, runID(a)); err != nil {
		t.Fatal(err)
	}
	eventually(t, b.ip+" knows "+a.ip+" serves every slot", func() bool {
		v, err := p.Survey(ctx, b.ip)
		return err == nil && v.SlotsSeen == machine.NumSlots
	})
	if err := p.Replicate(ctx, b.ip, runID(b), a.ip, runID(a), testPasswords.Replication); err != nil {
		t.Fatal(err)
	}
	if err := p.OpenWrites(ctx, a.ip, runID(a)); err != nil {
		t.Fatal(err)
	}
	eventually(t, a.ip+" says cluster_state ok", func() bool {
		v, err := p.Survey(ctx, a.ip)
		return err == nil && v.ClusterOK
	})
	const keys = 2000
	cl, err := vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(a.ip)}, Password: testPasswords.Client, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	cmds := make(vk.Commands, 0, keys)
	for k := 0; k < keys; k++ {
		cmds = append(cmds, cl.B().Set().Key("stray:"+strconv.Itoa(k)).Value("v"+strconv.Itoa(k)).Build())
	}
	for _, r := range cl.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	eventually(t, b.ip+" holds every key", func() bool {
		v, err := p.Survey(ctx, b.ip)
		return err == nil && v.Keys == keys && v.LinkUp
	})

	// a is killed; b takes the slots over.
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
	if err := p.Promote(ctx, b.ip, runID(b)); err != nil {
		t.Fatal(err)
	}
	eventually(t, b.ip+" serves every slot", func() bool {
		v, err := p.Survey(ctx, b.ip)
		return err == nil && v.Role == machine.RolePrimary && machine.SlotCount(v.Slots) == machine.NumSlots
	})
	// a comes back from its files, as b's replica, its keys kept.
	a.start(t)
	eventually(t, a.ip+" follows "+b.ip, func() bool {
		v, err := p.Survey(ctx, a.ip)
		return err == nil && v.Role == machine.RoleReplica && v.PrimaryHost == b.ip && v.Joined
	})
	// b restarts empty from nodes.conf (its volume lost everything else: the RDB file its full
	// sync left behind is removed): it still serves every slot, fenced.
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
	if err := os.Remove(filepath.Join(b.dir, "dump.rdb")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	b.start(t)
	eventually(t, b.ip+" answers, empty, serving every slot", func() bool {
		v, err := p.Survey(ctx, b.ip)
		return err == nil && v.Keys == 0 && machine.SlotCount(v.Slots) == machine.NumSlots && v.SyncFenced
	})
	time.Sleep(1500 * time.Millisecond) // a replication cron tick or more: a tries to sync
	if v := survey(t, p, a); v.Keys != keys || v.LinkUp {
		t.Fatalf("%s holds %d keys (link up %v) after the empty %s restarted: want all %d, no sync", a.ip, v.Keys, v.LinkUp, b.ip, keys)
	}
	// The machine elects a (the most data) and promotes it: it takes b's slots over.
	if err := p.Detach(ctx, a.ip, runID(a)); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(ctx, a.ip, runID(a)); err != nil {
		t.Fatal(err)
	}
	eventually(t, a.ip+" serves every slot and holds every key", func() bool {
		v, err := p.Survey(ctx, a.ip)
		return err == nil && v.Role == machine.RolePrimary && machine.SlotCount(v.Slots) == machine.NumSlots && v.Keys == keys
	})
	eventually(t, b.ip+" follows "+a.ip, func() bool {
		return p.Replicate(ctx, b.ip, runID(b), a.ip, runID(a), testPasswords.Replication) == nil
	})
	if err := p.OpenWrites(ctx, a.ip, runID(a)); err != nil {
		t.Fatal(err)
	}
	cl, err = vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(a.ip)}, Password: testPasswords.Client, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cmds = cmds[:0]
	for k := 0; k < keys; k++ {
		cmds = append(cmds, cl.B().Get().Key("stray:"+strconv.Itoa(k)).Build())
	}
	for k, r := range cl.DoMulti(ctx, cmds...) {
		if v, err := r.ToString(); err != nil || v != "v"+strconv.Itoa(k) {
			t.Fatalf("stray:%d reads %q, %v", k, v, err)
		}
	}
	clusterCheck(t, a.ip)
}
