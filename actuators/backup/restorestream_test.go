package backup

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/internal/testcert"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestALargeValueIsLoadedIntoAClusterNodeWithoutBeingHeld: a cluster-mode shard holds a string
// of 64 MiB (random, so the file holds it raw, with an expiry), a list of about 6 MiB (hundreds
// of nodes, read piece by piece), a hash of over a MiB in a hash table, and small keys around
// them in the file's order (one in the large string's own slot), under an LRU policy (every key
// carries its idle time). Its backup is loaded by LoadByRestore into another cluster-mode node
// reached over TLS: the node then holds exactly the source's keys (the oracle's digest, read with
// a client of the test's own) and the large string's absolute expiry, and what the operator
// allocated in all during the load (the check and the replay) stays far below the large value.
func TestALargeValueIsLoadedIntoAClusterNodeWithoutBeingHeld(t *testing.T) {
	const size = 64 << 20
	store := startStore(t, "127.77.41.1")
	src, dst := "127.77.41.2", "127.77.41.3"
	startClusterNode(t, src, "maxmemory-policy allkeys-lru\n")
	ca, err := testcert.NewCA("backup-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	startClusterNode(t, dst, tlsLines(t, ca, "target.test"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	expireAt := writeLargeValues(t, src, size)
	want, keys := digest(t, src)
	res, err := Take(ctx, Source{Addr: valkey.Addr(src), User: valkey.UserReplication, Password: passwords.Replication}, store, "large.rdb")
	if err != nil {
		t.Fatal(err)
	}
	all := []machine.SlotRange{{Start: 0, End: machine.NumSlots - 1}}
	// The file holds what the test means: three values the load streams.
	if _, large, err := validate(ctx, store, "large.rdb", res, true, all); err != nil || len(large) != 3 {
		t.Fatalf("the check measured %d large values (%v), want 3: %v", len(large), large, err)
	}

	p := valkey.NewPool(valkey.Options{Password: passwords.Operator, Timeout: 2 * time.Second})
	defer p.Close()
	if err := p.AllowRestore(ctx, dst); err != nil {
		t.Fatal(err)
	}
	target := Target{Addr: net.JoinHostPort(dst, strconv.Itoa(valkey.TLSPort)), User: valkey.UserOperator, Password: passwords.Operator, MasterUser: valkey.UserReplication, MasterPassword: passwords.Replication, TLS: ca.ClientConfig("target.test")}
	alloc := allocated(func() {
		if _, err = LoadByRestore(ctx, target, store, "large.rdb", res, all); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("loading a backup of %d bytes with a %d-byte value allocated %d bytes in all", res.Size, size, alloc)
	if got, n := digest(t, dst); got != want || n != keys {
		t.Fatalf("the loaded node holds %d keys (digest %s), the source %d (%s)", n, got, keys, want)
	}
	dc := client(t, dst, oracleUser, oraclePassword)
	if at, err := dc.Do(ctx, dc.B().Pexpiretime().Key("large").Build()).AsInt64(); err != nil || at != expireAt {
		t.Fatalf("the large value expires at %d (%v), the source's at %d", at, err, expireAt)
	}
	if alloc > size/8 {
		t.Fatalf("loading a %d-byte value allocated %d bytes: the value was held", size, alloc)
	}
}

// allocated is how many bytes f allocated (runtime.MemStats.TotalAlloc: every allocation
// counts, whether it was freed or not).
func allocated(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// writeLargeValues writes, through the oracle's user, a random string of size bytes with an
// expiry (returned, in Unix milliseconds), a list of about 6 MiB, a hash of about 1.5 MiB in a
// hash table, and 2,000 small keys across the slots (one in the string's).
func writeLargeValues(t testing.TB, ip string, size int) int64 {
	t.Helper()
	ctx := context.Background()
	c := client(t, ip, oracleUser, oraclePassword)
	value := make([]byte, size)
	if _, err := rand.Read(value); err != nil {
		t.Fatal(err)
	}
	expireAt := time.Now().Add(time.Hour).UnixMilli()
	cmds := vk.Commands{
		c.B().Set().Key("large").Value(vk.BinaryString(value)).Build(),
		c.B().Pexpireat().Key("large").MillisecondsTimestamp(expireAt).Build(),
		c.B().Set().Key("{large}:small").Value("next to the large value").Build(),
	}
	element := make([]byte, 100)
	for i := 0; i < 60_000; i++ {
		_, _ = rand.Read(element)
		cmds = append(cmds, c.B().Rpush().Key("list").Element(string(element)).Build())
	}
	for i := 0; i < 30_000; i++ {
		_, _ = rand.Read(element[:40])
		cmds = append(cmds, c.B().Hset().Key("hash").FieldValue().FieldValue("f"+strconv.Itoa(i), string(element[:40])).Build())
	}
	for i := 0; i < 2000; i++ {
		cmds = append(cmds, c.B().Set().Key("small:"+strconv.Itoa(i)).Value(strconv.Itoa(i)).Build())
	}
	for _, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
	return expireAt
}

// startClusterNode runs a cluster-mode valkey-server on ip (extra: more configuration lines)
// serving every slot, and waits for it to say cluster_state ok.
func startClusterNode(t testing.TB, ip, extra string) {
	t.Helper()
	startValkey(t, "", ip, t.TempDir(), fmt.Sprintf("cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-announce-ip %s\n%s", ip, extra))
	ctx := context.Background()
	p := valkey.NewPool(valkey.Options{Password: passwords.Operator, Timeout: 2 * time.Second})
	defer p.Close()
	v, err := p.Survey(ctx, ip)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AssignSlots(ctx, ip, v.RunID, []machine.SlotRange{{Start: 0, End: machine.NumSlots - 1}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if v, err := p.Survey(ctx, ip); err == nil && v.ClusterOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never said cluster_state ok", ip)
		}
	}
}

// tlsLines are the configuration lines that serve TLS on valkey.TLSPort beside the plain port,
// with a certificate for name from ca (written to a directory of the test's).
func tlsLines(t testing.TB, ca *testcert.CA, name string) string {
	t.Helper()
	dir := t.TempDir()
	pair, err := ca.Issue(time.Now().UnixNano(), []string{name}, nil, time.Now().Add(-time.Minute), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for file, data := range map[string][]byte{"tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM, "ca.crt": ca.PEM} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("tls-port %d\ntls-cert-file %[2]s/tls.crt\ntls-key-file %[2]s/tls.key\ntls-ca-cert-file %[2]s/ca.crt\ntls-auth-clients no\n", valkey.TLSPort, dir)
}

// A streamed value the node refuses ends the load with the key's name and the node's reason:
// one longer than its proto-max-bulk-len (the node answers as soon as it reads the length and
// closes the connection while the value is still being written), and one that takes the node
// beyond its maxmemory (the node answers once it has read the whole command).
func TestAStreamedValueTheNodeRefusesIsNamed(t *testing.T) {
	store := startStore(t, "127.77.43.1")
	s := putBackup(t, store, "refused", machine.ModeCluster, largeValueRDB(t, 4<<20)).Shards[0]
	for i, c := range []struct{ config, want string }{
		{"proto-max-bulk-len 2mb\n", "invalid bulk length"},
		{"maxmemory 3mb\nmaxmemory-policy noeviction\n", "OOM command not allowed"},
	} {
		ip := fmt.Sprintf("127.77.43.%d", 2+i)
		startClusterNode(t, ip, c.config)
		p := valkey.NewPool(valkey.Options{Password: passwords.Operator, Timeout: 2 * time.Second})
		defer p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.AllowRestore(ctx, ip); err != nil {
			t.Fatal(err)
		}
		target := Target{Addr: valkey.Addr(ip), User: valkey.UserOperator, Password: passwords.Operator, MasterUser: valkey.UserReplication, MasterPassword: passwords.Replication}
		_, err := LoadByRestore(ctx, target, store, "refused/"+s.File, Result{Size: s.Size, SHA256: s.SHA256}, s.Slots)
		if err == nil || !strings.Contains(err.Error(), `"big"`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("a node with %q: the load said %v, want the key \"big\" and %q", c.config, err, c.want)
		}
		t.Logf("a node with %q: %v", c.config, err)
	}
}
