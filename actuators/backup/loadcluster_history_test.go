package backup

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// A key-by-key load that fails after it emptied the node (here a function library the node
// refuses to load: the file's structure is valid, so only the node finds out) leaves the node
// under a new replication ID, also a node that had no backlog (no replica ever synced from it):
// the machine tells a node whose data a refused restore did not touch by its unchanged
// history, and this one was emptied.
func TestALoadCutShortAfterEmptyingLeavesANewHistory(t *testing.T) {
	store := startStore(t, "127.77.41.1")
	ip := "127.77.41.2"
	startValkey(t, "", ip, t.TempDir(), fmt.Sprintf("cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-announce-ip %s\n", ip))
	p := valkey.NewPool(valkey.Options{Password: passwords.Operator, Timeout: 2 * time.Second})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := p.Survey(ctx, ip)
	if err != nil {
		t.Fatal(err)
	}
	all := []machine.SlotRange{{Start: 0, End: machine.NumSlots - 1}}
	if err := p.AssignSlots(ctx, ip, v.RunID, all); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster_state ok", func() error {
		if v, err := p.Survey(ctx, ip); err != nil || !v.ClusterOK {
			return fmt.Errorf("not ok yet (%v)", err)
		}
		return nil
	})
	load(t, ip, 20)
	before, err := p.Survey(ctx, ip)
	if err != nil {
		t.Fatal(err)
	}
	info, err := infoOf(ctx, client(t, ip, valkey.UserOperator, passwords.Operator))
	if err != nil || info["repl_backlog_active"] != "0" {
		t.Fatalf("the node must start without a backlog: %v %v", info["repl_backlog_active"], err)
	}

	code := "#!lua name=broken\nserver.register_function('f', function() return end end)"
	body := fakeRDB("REDIS0011", append([]byte{rdbOpFunction2, 0x40 | byte(len(code)>>8), byte(len(code))}, code...))
	m := putBackup(t, store, "broken-function", machine.ModeCluster, body)
	if _, err := VerifyBackup(ctx, store, "broken-function", machine.ModeCluster, 1); err != nil {
		t.Fatalf("the file's structure is valid, the check refused it: %v", err)
	}
	if err := p.Fence(ctx, ip, before.RunID); err != nil {
		t.Fatal(err)
	}
	if err := p.AllowRestore(ctx, ip); err != nil {
		t.Fatal(err)
	}
	target := Target{Addr: valkey.Addr(ip), User: valkey.UserOperator, Password: passwords.Operator, MasterUser: valkey.UserReplication, MasterPassword: passwords.Replication}
	s := m.Shards[0]
	if _, err := LoadByRestore(ctx, target, store, "broken-function/"+s.File, Result{Size: s.Size, SHA256: s.SHA256}, all); err == nil {
		t.Fatal("the node loaded a library it cannot compile")
	}
	after, err := p.Survey(ctx, ip)
	if err != nil {
		t.Fatal(err)
	}
	if _, keys := digest(t, ip); keys != 0 {
		t.Fatalf("the node holds %d keys: the load failed before it emptied the node, which this test needs", keys)
	}
	if after.RunID != before.RunID || after.ReplID == before.ReplID || after.ReplID2 == before.ReplID {
		t.Fatalf("emptied by the load, the node answers as run %s under %s (previous %s); before: run %s under %s", after.RunID, after.ReplID, after.ReplID2, before.RunID, before.ReplID)
	}
}
