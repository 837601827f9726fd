package backup

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// A backup comes from outside the operator: anyone who can write to the bucket can write a file
// and a manifest that matches it. These tests hand the restore files crafted to hurt it (lengths
// of a terabyte, counts no file can hold, LZF blocks that expand past what they claim), each
// with a correct RDB checksum, and check that each is refused with what it claimed and where,
// before any node sees it, without the operator allocating what the file claims.

// tib is the length the crafted files claim: a terabyte.
const tib = 1 << 40

// len64 is an RDB 64-bit length (0x81, big-endian).
func len64(n uint64) []byte { return binary.BigEndian.AppendUint64([]byte{0x81}, n) }

// crafted are whole RDB files (header, end opcode, correct CRC-64) a node would choke on, and
// what their refusal must say.
func crafted() []struct {
	name string
	body []byte
	want string
} {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	key := []byte{1, 'k'}
	return []struct {
		name string
		body []byte
		want string
	}{
		{"a string value of 1 TiB", fakeRDB("REDIS0011", cat([]byte{0}, key, len64(tib))), "a string claims 1099511627776 bytes"},
		{"a key name of 1 TiB", fakeRDB("REDIS0011", cat([]byte{0}, len64(tib))), "a string claims 1099511627776 bytes"},
		{"a list of 2^40 items", fakeRDB("REDIS0011", cat([]byte{1}, key, len64(tib))), "a collection claims 1099511627776 items"},
		{"a string longer than the rest of the file", fakeRDB("REDIS0011", cat([]byte{0}, key, []byte{0x40 | 1, 0x00}, []byte("short"))), "claims 256 bytes, only"},
		{"an LZF value expanding to 1 TiB", fakeRDB("REDIS0011", cat([]byte{0}, key, []byte{0xc3, 2}, len64(tib), []byte{0, 'v'})), "claims to expand to 1099511627776"},
		{"an LZF block of 1 TiB", fakeRDB("REDIS0011", cat([]byte{0}, key, []byte{0xc3}, len64(tib), []byte{5, 0, 'v'})), "an LZF string claims 1099511627776 bytes"},
		{"an LZF block that expands short of its claim", fakeRDB("REDIS0011", cat([]byte{0}, key, []byte{0xc3, 2, 60, 0, 'v'})), "expands to 1 bytes, claims 60"},
		{"an LZF back reference before the start", fakeRDB("REDIS0011", cat([]byte{0}, key, []byte{0xc3, 4, 8, 0, 'v', 0x20, 5})), "reaches before the start"},
		{"a consumer with 2^40 pending entries", fakeRDB("REDIS0011", cat([]byte{rdbTypeStreams}, key, []byte{0, 0, 0, 0, 1, 1, 'g', 0, 0, 0, 1, 1, 'c'}, make([]byte, 8), len64(tib))), "a consumer claims 1099511627776 pending entries"},
		{"an unknown opcode", fakeRDB("REDIS0011", cat([]byte{230}, key, []byte{1, 'v'})), "unknown value type 230"},
		{"a module's aux data", fakeRDB("REDIS0011", []byte{rdbOpModuleAux, 0}), "opcode 247"},
		{"database 200", fakeRDB("REDIS0011", cat([]byte{rdbOpSelectDB, 0x40, 200, 0}, key, []byte{1, 'v'})), "selects database 200"}, // 0x40: a 14-bit length, 0<<8 | 200
		{"bytes after the end", append(fakeRDB("REDIS0011", nil), 0), "followed by 9 bytes"},
		{"truncated before its end", fakeRDB("REDIS0011", cat([]byte{0}, key))[:12], "ends before its end-of-file opcode"},
		{"an unknown length encoding", fakeRDB("REDIS0011", cat([]byte{0}, key, []byte{0x85})), "unknown length encoding 0x85"},
	}
}

// Each crafted file is refused as content (ErrCorrupt) with what it claimed, in both
// topologies' readings, and reading it allocates nothing near what it claims.
func TestACraftedRDBIsRefusedWithTheReason(t *testing.T) {
	for _, c := range crafted() {
		for _, cluster := range []bool{false, true} {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := parseRDB(c.body, cluster)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s (cluster %v): %v, want a refusal saying %q", c.name, cluster, err, c.want)
				continue
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
				t.Errorf("%s: reading it allocated %d bytes", c.name, alloc)
			}
			if !cluster {
				t.Logf("%s: %v", c.name, err)
			}
		}
	}
}

// putBackup stores body as the one shard of a backup in mode, with a manifest whose size and
// sha256 match it.
func putBackup(t *testing.T, store Store, name string, mode machine.Mode, body []byte) Manifest {
	t.Helper()
	sum := sha256.Sum256(body)
	m := Manifest{Backup: name, Cluster: "crafted", Mode: mode, Started: time.Now().UTC(), Completed: time.Now().UTC(), Shards: []Shard{{
		Index: 0, Node: "crafted-0", File: "shard-0.rdb", Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:]), RDBVersion: "0011",
	}}}
	if mode == machine.ModeCluster {
		m.Shards[0].Slots = []machine.SlotRange{{Start: 0, End: machine.NumSlots - 1}}
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	putObject(t, store, path.Join(name, m.Shards[0].File), body)
	putObject(t, store, path.Join(name, ManifestName), manifest)
	return m
}

// A crafted backup with a correct manifest (size, sha256) and a correct RDB checksum is refused
// by the restore's check in both topologies, with the reason, and Load refuses it before the
// node is touched: the node keeps its data and its process (no restart: the same run ID).
func TestACraftedBackupIsRefusedBeforeAnyNodeLoadsIt(t *testing.T) {
	store := startStore(t, "127.77.40.1")
	ip := "127.77.40.2"
	startValkey(t, "", ip, t.TempDir(), "")
	load(t, ip, 50)
	want, keys := digest(t, ip)
	p := valkey.NewPool(valkey.Options{Password: passwords.Operator, Timeout: 2 * time.Second})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before, err := p.Survey(ctx, ip)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crafted()[:5] {
		for _, mode := range []machine.Mode{machine.ModeReplication, machine.ModeCluster} {
			name := strings.ReplaceAll(c.name, " ", "-") + "-" + string(mode)
			m := putBackup(t, store, name, mode, c.body)
			if _, err := VerifyBackup(ctx, store, name, mode, 1); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s in %s mode: the check said %v, want a refusal saying %q", c.name, mode, err, c.want)
			}
			if mode != machine.ModeReplication {
				continue
			}
			s := m.Shards[0]
			target := Target{Addr: valkey.Addr(ip), User: valkey.UserOperator, Password: passwords.Operator, MasterUser: valkey.UserReplication, MasterPassword: passwords.Replication}
			err := Load(ctx, target, ip, store, path.Join(name, s.File), Result{Size: s.Size, SHA256: s.SHA256})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: Load said %v, want a refusal saying %q", c.name, err, c.want)
			}
		}
	}
	after, err := p.Survey(ctx, ip)
	if err != nil {
		t.Fatal(err)
	}
	if after.RunID != before.RunID || after.Role != machine.RolePrimary {
		t.Fatalf("the node was %s (run %s), is now %s (run %s)", before.Role, before.RunID, after.Role, after.RunID)
	}
	if got, n := digest(t, ip); got != want || n != keys {
		t.Fatalf("the node holds %d keys (%s), held %d (%s)", n, got, keys, want)
	}
}

// A legitimate value of 48 MiB (incompressible) is checked, in the Cluster topology where every
// key is read as the key-by-key load reads it, without the operator holding it: what the check
// allocates in all is far below the value's size.
func TestALargeValueIsVerifiedInBoundedMemory(t *testing.T) {
	store := startStore(t, "127.77.40.3")
	const size = 48 << 20
	// Made and stored in a call of its own, so that nothing of the file stays reachable here
	// while the check's allocations are measured.
	putBackup(t, store, "large", machine.ModeCluster, largeValueRDB(t, size))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := VerifyBackup(ctx, store, "large", machine.ModeCluster, 1); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("checking a backup of a %d-byte value allocated %d bytes in all", size, alloc)
	if alloc > size/4 {
		t.Fatalf("checking a %d-byte value allocated %d bytes", size, alloc)
	}
}

// largeValueRDB is an RDB file of one string key whose value is size random bytes.
func largeValueRDB(t *testing.T, size uint32) []byte {
	t.Helper()
	value := make([]byte, size)
	if _, err := rand.Read(value); err != nil {
		t.Fatal(err)
	}
	return fakeRDB("REDIS0011", bytes.Join([][]byte{{0, 3}, []byte("big"), {0x80}, binary.BigEndian.AppendUint32(nil, size), value}, nil))
}
