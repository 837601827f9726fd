package backup

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
)

// loadEveryEncoding writes, through the oracle's user, keys in every encoding an RDB file holds
// for them: small and large strings (integers, LZF-compressed), lists, sets (intset, listpack,
// hash table), sorted sets (listpack, skiplist), hashes (listpack, hash table), streams with
// consumer groups, pending entries and consumers, keys with an expiry, keys that are numbers,
// a function library, and on 9.1 hashes with field expiries.
func loadEveryEncoding(t *testing.T, c vk.Client, version string) {
	t.Helper()
	ctx := context.Background()
	var cmds vk.Commands
	big := strings.Repeat("compressible ", 400)
	for i := 0; i < 300; i++ {
		k := strconv.Itoa(i)
		cmds = append(cmds,
			c.B().Set().Key(k).Value(k).Build(), // a key and a value that are integers
			c.B().Set().Key("big:"+k).Value(big+k).Build(),
			c.B().Set().Key("ttl:"+k).Value(k).PxMilliseconds(int64(3_600_000+i)).Build(),
			c.B().Rpush().Key("list:"+k).Element("a", k, big).Build(),
			c.B().Sadd().Key("intset:"+k).Member("1", "2", k).Build(),
			c.B().Sadd().Key("set:"+k).Member("a", "b", k).Build(),
			c.B().Zadd().Key("zset:"+k).ScoreMember().ScoreMember(1.5, "a").ScoreMember(float64(i), k).Build(),
			c.B().Hset().Key("hash:"+k).FieldValue().FieldValue("f", k).FieldValue("g", big).Build(),
		)
	}
	// Collections too large for the compact encodings.
	for i := 0; i < 600; i++ {
		k := strconv.Itoa(i)
		cmds = append(cmds,
			c.B().Sadd().Key("bigset").Member("m"+k).Build(),
			c.B().Sadd().Key("bigintset").Member(k).Build(),
			c.B().Zadd().Key("bigzset").ScoreMember().ScoreMember(float64(i)/3, "m"+k).Build(),
			c.B().Hset().Key("bighash").FieldValue().FieldValue("f"+k, k).Build(),
			c.B().Rpush().Key("biglist").Element(k).Build(),
			c.B().Xadd().Key("stream").Id("*").FieldValue().FieldValue("f", k).Build(),
		)
	}
	cmds = append(cmds,
		c.B().Zadd().Key("inf").ScoreMember().ScoreMember(-1, "low").Build(),
		c.B().XgroupCreate().Key("stream").Group("g1").Id("0").Build(),
		c.B().XgroupCreate().Key("stream").Group("g2").Id("$").Build(),
		c.B().Xreadgroup().Group("g1", "alice").Count(5).Streams().Key("stream").Id(">").Build(),
		c.B().Xreadgroup().Group("g1", "bob").Count(3).Streams().Key("stream").Id(">").Build(),
		c.B().FunctionLoad().Replace().FunctionCode("#!lua name=restorelib\nserver.register_function('answer', function() return 42 end)").Build(),
	)
	if version == "9.1" {
		cmds = append(cmds, c.B().Arbitrary("HSETEX", "fieldttl", "EX", "3600", "FIELDS", "1", "f", "v").Build(),
			c.B().Hset().Key("fieldttl").FieldValue().FieldValue("g", "w").Build())
	}
	for _, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil && !vk.IsValkeyNil(err) {
			t.Fatal(err)
		}
	}
}

// TestAnRDBFileIsReplayedKeyByKey: a real node's snapshot (8.0 and 9.1) with keys in every
// encoding is cut into keys by readRDBKeys and replayed with RESTORE (and FUNCTION LOAD) into an
// empty node: both hold exactly the same keys, values and expiries (a digest of every key's DUMP
// and PTTL rounded to the minute, read with a client of the oracle's own), and the function.
func TestAnRDBFileIsReplayedKeyByKey(t *testing.T) {
	bins := valkeyBinaries(t)
	for i, version := range []string{"8.0", "9.1"} {
		t.Run(version, func(t *testing.T) {
			src, dst := fmt.Sprintf("127.77.%d.1", 52+i), fmt.Sprintf("127.77.%d.2", 52+i)
			startValkey(t, bins[version], src, t.TempDir(), "")
			startValkey(t, bins[version], dst, t.TempDir(), "")
			sc := client(t, src, oracleUser, oraclePassword)
			loadEveryEncoding(t, sc, version)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var rdb bytes.Buffer
			if _, err := StreamRDB(ctx, valkey.Addr(src), valkey.UserReplication, passwords.Replication, &rdb); err != nil {
				t.Fatal(err)
			}
			dc := client(t, dst, oracleUser, oraclePassword)
			var cmds vk.Commands
			funcs := 0
			ver, err := readRDBKeys(ctx, bytes.NewReader(rdb.Bytes()), int64(rdb.Len()), rdbVisitor{
				key: func(k rdbKey) error {
					cmds = append(cmds, dc.B().Arbitrary("RESTORE").Args(k.restoreArgs()...).Build())
					return nil
				},
				function: func(code []byte) error {
					funcs++
					cmds = append(cmds, dc.B().FunctionLoad().Replace().FunctionCode(string(code)).Build())
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range dc.DoMulti(ctx, cmds...) {
				if err := r.Error(); err != nil {
					t.Fatal(err)
				}
			}
			want, n := digest(t, src)
			got, m := digest(t, dst)
			if got != want || m != n {
				t.Fatalf("replayed %d command(s) from an RDB of version %d: the copy holds %d keys (digest %s), the source %d (%s)", len(cmds), ver, m, got, n, want)
			}
			if ttlDigest(t, dc) != ttlDigest(t, sc) {
				t.Fatal("the copy's expiries differ from the source's")
			}
			if funcs != 1 {
				t.Fatalf("%d function libraries replayed, want 1", funcs)
			}
			if v, err := dc.Do(ctx, dc.B().Fcall().Function("answer").Numkeys(0).Build()).AsInt64(); err != nil || v != 42 {
				t.Fatalf("FCALL answer on the copy: %d, %v", v, err)
			}
			t.Logf("Valkey %s: RDB version %d, %d bytes, %d keys replayed", version, ver, rdb.Len(), n)
		})
	}
}

// ttlDigest lists every key's expiry, rounded to the minute (the copy is made a moment later).
func ttlDigest(t *testing.T, c vk.Client) string {
	t.Helper()
	ctx := context.Background()
	keys, err := c.Do(ctx, c.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, k := range keys {
		ms, err := c.Do(ctx, c.B().Pexpiretime().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if ms > 0 {
			ms /= 60_000
		}
		lines = append(lines, fmt.Sprintf("%s %d", k, ms))
	}
	return linesDigest(lines)
}

// A truncated or damaged file is refused with the place it broke, never half-read silently.
func TestABrokenRDBFileIsRefused(t *testing.T) {
	key := []byte{0, 1, 'k', 1, 'v'} // a string key "k" = "v"
	good := fakeRDB("REDIS0011", key)
	if _, err := parseRDB(good, true); err != nil {
		t.Fatalf("a whole file: %v", err)
	}
	for name, b := range map[string][]byte{
		"truncated":     good[:len(good)-2],
		"no end":        good[:len(good)-9],
		"unknown type":  fakeRDB("REDIS0011", []byte{99, 1, 'k', 1, 'v'}),
		"module value":  fakeRDB("REDIS0011", []byte{rdbTypeModule2, 1, 'k', 0}),
		"other db":      fakeRDB("REDIS0011", append([]byte{rdbOpSelectDB, 3}, key...)),
		"not an RDB":    []byte("hello world, this is not one"),
		"bad LZF block": fakeRDB("REDIS0011", []byte{0, 0xc3, 5, 10, 0xe0, 0, 0, 0, 0, 1, 'v'}),
	} {
		if _, err := parseRDB(b, true); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// parseRDB walks b as a restore's check does (cluster: as the key-by-key load reads it).
func parseRDB(b []byte, cluster bool) (uint16, error) {
	return readRDBKeys(context.Background(), bytes.NewReader(b), int64(len(b)), rdbVisitor{cluster: cluster})
}
