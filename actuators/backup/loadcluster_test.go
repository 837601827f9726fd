package backup

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/internal/oracle"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestAClusterNodeIsLoadedKeyByKey: a real cluster-mode shard (a primary serving every slot and
// its replica, 8.0 and 9.1) holds keys of every encoding and a function library; a backup is
// taken; more keys are written and some deleted; the primary is fenced as the machine fences it
// and LoadByRestore loads the backup into it. The primary then holds exactly the snapshot (the
// oracle's digest of every key), under a replication ID that is neither its old one nor shared
// with its replica, its min-replicas-to-write and backlog TTL as the operator runs them even
// after an interrupted load left others; once opened for replicas, the replica resyncs under
// that ID and holds the snapshot too. A manifest whose slots do not cover the file's keys is
// refused.
func TestAClusterNodeIsLoadedKeyByKey(t *testing.T) {
	bins := valkeyBinaries(t)
	store := startStore(t, "127.77.9.8")
	p := valkey.NewPool(valkey.Options{Password: passwords.Operator, Timeout: 2 * time.Second})
	defer p.Close()
	for i, version := range []string{"8.0", "9.1"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			prim, repl := fmt.Sprintf("127.77.%d.1", 24+i), fmt.Sprintf("127.77.%d.2", 24+i)
			for _, ip := range []string{prim, repl} {
				// min-replicas-to-write as in the Durable profile: the load cuts the replicas off.
				startValkey(t, bins[version], ip, t.TempDir(), fmt.Sprintf("cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-announce-ip %s\nmin-replicas-to-write 1\nmin-replicas-max-lag 10\n", ip))
			}
			pv, err := p.Survey(ctx, prim)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.AssignSlots(ctx, prim, pv.RunID, []machine.SlotRange{{Start: 0, End: machine.NumSlots - 1}}); err != nil {
				t.Fatal(err)
			}
			rv, err := p.Survey(ctx, repl)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Meet(ctx, repl, rv.RunID, prim); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the replica to follow the primary", func() error {
				if err := p.Replicate(ctx, repl, rv.RunID, prim, pv.RunID, passwords.Replication); err != nil {
					return err
				}
				return linkedTo(ctx, p, repl, "")
			})
			eventually(t, "cluster_state ok", func() error {
				if v, err := p.Survey(ctx, prim); err != nil || !v.ClusterOK {
					return fmt.Errorf("not ok yet (%v)", err)
				}
				return nil
			})
			pc := client(t, prim, oracleUser, oraclePassword)
			loadEveryEncoding(t, pc, version)
			snapshot, keys := digest(t, prim)
			name := "shard-" + version + ".rdb"
			res, err := Take(ctx, Source{Addr: valkey.Addr(prim), User: valkey.UserReplication, Password: passwords.Replication}, store, name)
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 200; k++ {
				if err := pc.Do(ctx, pc.B().Set().Key("after:"+strconv.Itoa(k)).Value("x").Build()).Error(); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range []string{"bigset", "stream"} {
				if err := pc.Do(ctx, pc.B().Del().Key(k).Build()).Error(); err != nil {
					t.Fatal(err)
				}
			}
			before, err := p.Survey(ctx, prim)
			if err != nil {
				t.Fatal(err)
			}

			if err := p.Fence(ctx, prim, pv.RunID); err != nil {
				t.Fatal(err)
			}
			if err := p.AllowRestore(ctx, prim); err != nil {
				t.Fatal(err)
			}
			// What a load interrupted by the operator's death leaves behind: the next one must
			// not take it for the node's settings.
			for param, v := range map[string]string{"min-replicas-to-write": "0", "repl-backlog-ttl": "1"} {
				if err := pc.Do(ctx, pc.B().ConfigSet().ParameterValue().ParameterValue(param, v).Build()).Error(); err != nil {
					t.Fatal(err)
				}
			}
			target := Target{Addr: valkey.Addr(prim), User: valkey.UserOperator, Password: passwords.Operator, MasterUser: valkey.UserReplication, MasterPassword: passwords.Replication, MinReplicasToWrite: "1"}
			id, err := LoadByRestore(ctx, target, store, name, res, []machine.SlotRange{{Start: 0, End: machine.NumSlots - 1}})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.RevokeRestore(ctx, prim); err != nil {
				t.Fatal(err)
			}
			after, err := p.Survey(ctx, prim)
			if err != nil {
				t.Fatal(err)
			}
			if got, n := digest(t, prim); got != snapshot || n != keys {
				t.Fatalf("the loaded primary holds %d keys (digest %s), the snapshot %d (%s)", n, got, keys, snapshot)
			}
			if after.ReplID != id || id == before.ReplID || after.ReplID2 == before.ReplID {
				t.Fatalf("replication IDs before %s/%s, after %s/%s, returned %s: the load must start a history of its own", before.ReplID, before.ReplID2, after.ReplID, after.ReplID2, id)
			}
			oc := client(t, prim, valkey.UserOperator, passwords.Operator)
			if oc.Do(ctx, oc.B().Flushall().Build()).Error() == nil {
				t.Fatal("the operator's user kept FLUSHALL after the load")
			}
			for param, want := range map[string]string{"min-replicas-to-write": "1", "repl-backlog-ttl": "3600"} {
				if got, err := oc.Do(ctx, oc.B().ConfigGet().Parameter(param).Build()).AsStrMap(); err != nil || got[param] != want {
					t.Fatalf("%s after the load: %v, %v; want %s", param, got, err, want)
				}
			}

			if err := p.OpenSync(ctx, prim, pv.RunID); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the replica to resync from the loaded primary", func() error { return linkedTo(ctx, p, repl, id) })
			var got string
			var n int
			err = client(t, repl, oracleUser, oraclePassword).Dedicated(func(c vk.DedicatedClient) error {
				if err := c.Do(ctx, c.B().Readonly().Build()).Error(); err != nil {
					return err
				}
				got, n, err = oracle.Digest(ctx, c)
				return err
			})
			if err != nil || got != snapshot || n != keys {
				t.Fatalf("the replica holds %d keys (digest %s, %v) after its resync, the snapshot %d (%s)", n, got, err, keys, snapshot)
			}

			if err := p.AllowRestore(ctx, prim); err != nil {
				t.Fatal(err)
			}
			_, err = LoadByRestore(ctx, target, store, name, res, []machine.SlotRange{{Start: 0, End: 99}})
			if err == nil || !strings.Contains(err.Error(), "which the shard did not serve in the backup") {
				t.Fatalf("a manifest whose slots miss the file's keys: %v, want a refusal", err)
			}
		})
	}
}

// linkedTo says why the node at ip is not a replica linked to its primary under the
// replication ID id ("": any).
func linkedTo(ctx context.Context, p *valkey.Pool, ip, id string) error {
	v, err := p.Survey(ctx, ip)
	switch {
	case err != nil:
		return err
	case v.Role != machine.RoleReplica || !v.LinkUp:
		return fmt.Errorf("role %s, link up %v", v.Role, v.LinkUp)
	case id != "" && v.ReplID != id:
		return fmt.Errorf("replication ID %s, want %s", v.ReplID, id)
	}
	return nil
}

// eventually retries f for up to 30 s.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
