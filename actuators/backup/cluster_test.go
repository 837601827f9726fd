package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestAClusterBackupIsOneFilePerShardAndAManifestWrittenLast: two shards of a real cluster (8.0)
// hold 3,000 keys; TakeAll stores one snapshot per shard and then the manifest (shard → node,
// slots, file, size, sha256). The backup verifies for a cluster of two shards; it is refused for
// three, with a flipped byte in one shard's file, and without its manifest (incomplete: never
// restored). Each shard's file loaded into a node of its own gives back exactly the keys that
// shard served, values included (the union's digest against the cluster's). A shard that cannot
// be read fails the backup and leaves nothing behind.
func TestAClusterBackupIsOneFilePerShardAndAManifestWrittenLast(t *testing.T) {
	store := startStore(t, "127.77.9.7")
	ips := []string{"127.77.12.1", "127.77.12.2"}
	p := valkey.NewPool(valkey.Options{Password: passwords.Operator, Timeout: 2 * time.Second})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	plan := machine.SlotPlan(2)
	for i, ip := range ips {
		startValkey(t, "", ip, t.TempDir(), fmt.Sprintf("cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-announce-ip %s\n", ip))
		v, err := p.Survey(ctx, ip)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			if err := p.Meet(ctx, ip, v.RunID, ips[0]); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.AssignSlots(ctx, ip, v.RunID, []machine.SlotRange{plan[i]}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, ip := range ips {
		for {
			v, err := p.Survey(ctx, ip)
			if err == nil && v.ClusterOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never said cluster_state ok", ip)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	cl, err := vk.NewClient(vk.ClientOption{InitAddress: []string{valkey.Addr(ips[0])}, Username: oracleUser, Password: oraclePassword, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const keys = 3000
	cmds := make(vk.Commands, 0, keys)
	for k := 0; k < keys; k++ {
		cmds = append(cmds, cl.B().Set().Key("c:"+strconv.Itoa(k)).Value("v"+strconv.Itoa(k)).Build())
	}
	for _, r := range cl.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
	clusterDigest := keyDigest(t, cl, keys)

	var shards []ShardSource
	for i, ip := range ips {
		shards = append(shards, ShardSource{Index: i, Node: fmt.Sprintf("s%d-0", i), Slots: []machine.SlotRange{plan[i]},
			Source: Source{Addr: valkey.Addr(ip), User: valkey.UserReplication, Password: passwords.Replication}})
	}
	m, err := TakeAll(ctx, store, "demo-1", "demo", machine.ModeCluster, "8.0.1", shards, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != 2 || m.Shards[1].Slots[0] != plan[1] {
		t.Fatalf("manifest %+v", m)
	}
	if _, err := VerifyBackup(ctx, store, "demo-1", machine.ModeCluster, 2); err != nil {
		t.Fatalf("the backup as taken: %v", err)
	}
	if _, err := VerifyBackup(ctx, store, "demo-1", machine.ModeCluster, 3); err == nil || !strings.Contains(err.Error(), "holds 2 shard(s), the cluster has 3") {
		t.Errorf("restoring onto three shards: %v, want it refused", err)
	}

	// Each shard's file alone gives back its shard's keys.
	var loaded []string
	for i, s := range m.Shards {
		var data bytes.Buffer
		if err := Fetch(ctx, store, path.Join("demo-1", s.File), Result{Size: s.Size, SHA256: s.SHA256}, &data); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), data.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		ip := fmt.Sprintf("127.77.12.%d", 11+i)
		startValkey(t, "", ip, dir, "dbfilename dump.rdb\n")
		c := client(t, ip, oracleUser, oraclePassword)
		ks, err := c.Do(ctx, c.B().Keys().Pattern("*").Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			slot := int(crc16([]byte(k)) % machine.NumSlots)
			if slot < s.Slots[0].Start || slot > s.Slots[0].End {
				t.Fatalf("shard %d's file holds %s, of slot %d outside its slots %v", i, k, slot, s.Slots)
			}
			v, err := c.Do(ctx, c.B().Get().Key(k).Build()).ToString()
			if err != nil {
				t.Fatal(err)
			}
			loaded = append(loaded, k+"="+v)
		}
	}
	if got := linesDigest(loaded); got != clusterDigest {
		t.Fatalf("the shards' files hold %d keys whose digest differs from the cluster's", len(loaded))
	}

	// A flipped byte in one shard's file, then no manifest at all.
	var data bytes.Buffer
	if err := Fetch(ctx, store, path.Join("demo-1", m.Shards[1].File), Result{}, &data); err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(data.Bytes())
	bad[len(bad)/2] ^= 0x02
	putObject(t, store, path.Join("demo-1", m.Shards[1].File), bad)
	if _, err := VerifyBackup(ctx, store, "demo-1", machine.ModeCluster, 2); err == nil || !strings.Contains(err.Error(), "shard 1") {
		t.Errorf("a flipped byte in shard 1's file: %v, want it refused", err)
	}
	if err := store.Delete(ctx, path.Join("demo-1", ManifestName)); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyBackup(ctx, store, "demo-1", machine.ModeCluster, 2); !errors.Is(err, ErrIncomplete) {
		t.Errorf("no manifest: %v, want the backup refused as incomplete", err)
	}

	// A shard that cannot be read fails the whole backup: the shards stored before it are
	// deleted and no manifest is written.
	shards[1].Addr = valkey.Addr("127.77.12.9") // nothing answers there
	if _, err := TakeAll(ctx, store, "demo-2", "demo", machine.ModeCluster, "8.0.1", shards, time.Now); err == nil || !strings.Contains(err.Error(), "shard 1") {
		t.Fatalf("a shard that cannot be read: %v, want the backup failed for shard 1", err)
	}
	out, err := store.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(store.Key("demo-2/"))})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 0 {
		t.Fatalf("a failed backup left %d object(s) behind", len(out.Contents))
	}

	// DeleteBackup removes every object of a backup's directory and nothing beside it; a
	// second deletion (retention repeated after a restart) is no error.
	putObject(t, store, "demo-10/keep.txt", []byte("another backup's object, a prefix of demo-1's name"))
	if n, err := DeleteBackup(ctx, store, "demo-1"); err != nil || n < 2 {
		t.Fatalf("DeleteBackup: %d object(s), %v", n, err)
	}
	for dir, want := range map[string]int{"demo-1/": 0, "demo-10/": 1} {
		out, err := store.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(store.Key(dir))})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Contents) != want {
			t.Errorf("%s holds %d object(s) after deleting demo-1, want %d", dir, len(out.Contents), want)
		}
	}
	if _, err := DeleteBackup(ctx, store, "demo-1"); err != nil {
		t.Errorf("deleting a deleted backup again: %v", err)
	}
}

// keyDigest hashes "key=value" of keys c:0 … c:n-1, sorted, read through the cluster client.
func keyDigest(t *testing.T, cl vk.Client, n int) string {
	t.Helper()
	var kvs []string
	for k := 0; k < n; k++ {
		key := "c:" + strconv.Itoa(k)
		v, err := cl.Do(context.Background(), cl.B().Get().Key(key).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		kvs = append(kvs, key+"="+v)
	}
	return linesDigest(kvs)
}

// linesDigest hashes lines in sorted order.
func linesDigest(lines []string) string {
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		fmt.Fprintln(h, l)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// crc16 is the cluster's key-to-slot hash (CRC16/XMODEM), for keys without a hash tag: an
// oracle of which shard a key belongs to, independent of the server.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for i := 0; i < 8; i++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
