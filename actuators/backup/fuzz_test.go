package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The restore's parsers of input from outside (the RDB reader, the LZF decoder, the manifest)
// under Go's fuzzer: whatever the bytes, they end (no panic, no hang) with a file accepted or a
// refusal, allocating nothing near what the bytes claim. `make test` runs each briefly,
// `make fuzz` for long.

// seedRDBs are the real RDB files of testdata/rdb (Valkey 8.0 and 9.1).
func seedRDBs(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "rdb", "*.rdb"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no seed RDB files in testdata/rdb: %v", err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// The seeds are real files a node wrote: both readings take them whole, and the cluster
// reading refuses only the 8.0 file's key outside database 0.
func TestTheSeedRDBsAreRead(t *testing.T) {
	for name, b := range seedRDBs(t) {
		if _, err := parseRDB(b, false); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if err := check(b, 4096); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := parseRDB(b, true); err == nil || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s read as a cluster node's: %v, want its database 3 refused", name, err)
		}
	}
}

func FuzzReadRDBKeys(f *testing.F) {
	for _, b := range seedRDBs(f) {
		f.Add(b)
	}
	for _, c := range crafted() {
		f.Add(c.body)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var held [][]byte
		_, err := readRDBKeys(context.Background(), bytes.NewReader(b), int64(len(b)), rdbVisitor{
			key: func(k rdbKey) error {
				// What a key's value is cut to never exceeds the file.
				if len(k.Value) > len(b) || len(k.Key) > len(b)*lzfMaxExpansion {
					t.Fatalf("a key of %d bytes and a value of %d from a file of %d", len(k.Key), len(k.Value), len(b))
				}
				held = append(held, bytes.Clone(k.Value))
				return nil
			},
		})
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("a refusal of bytes in memory that is not a content refusal: %v", err)
		}
		// A reading that streams every value hands out the same bytes as the one that holds
		// them, measures each as long, and stops where it stops.
		var streamed [][]byte
		var sizes []int64
		_, errStream := readRDBKeys(context.Background(), bytes.NewReader(b), int64(len(b)), rdbVisitor{
			stream: func(rdbKey, int64) (io.WriteCloser, error) { return &collected{into: &streamed}, nil },
			sized:  func(_, n int64) { sizes = append(sizes, n) },
		})
		if fmt.Sprint(errStream) != fmt.Sprint(err) || len(streamed) != len(held) || len(sizes) != len(held) {
			t.Fatalf("holding values: %d, %v; streaming them: %d (%d measured), %v", len(held), err, len(streamed), len(sizes), errStream)
		}
		for i := range held {
			if !bytes.Equal(streamed[i], held[i]) || sizes[i] != int64(len(held[i])) {
				t.Fatalf("value %d: held %d bytes, streamed %d, measured %d", i, len(held[i]), len(streamed[i]), sizes[i])
			}
		}
		// The streaming check (values never kept) agrees with the reading that keeps them.
		_, err2 := parseRDB(b, false)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("keeping values: %v; reading past them: %v", err, err2)
		}
	})
}

// collected is a streamed value written to memory; Close adds it to into.
type collected struct {
	bytes.Buffer
	into *[][]byte
}

func (c *collected) Close() error {
	*c.into = append(*c.into, c.Bytes())
	return nil
}

func FuzzLZF(f *testing.F) {
	f.Add([]byte{4, 'a', 'b', 'c', 'd', 'e', 0x20, 4}, uint64(8))
	f.Add([]byte{0, 'v', 0xe0, 10, 0}, uint64(13))
	f.Add([]byte{0, 'v', 0x20, 5}, uint64(4))
	f.Fuzz(func(t *testing.T, in []byte, ulen uint64) {
		if len(in) == 0 {
			return
		}
		out, err := lzfDecompress(in, ulen)
		if err == nil && uint64(len(out)) != ulen {
			t.Fatalf("expanded to %d bytes, claimed %d", len(out), ulen)
		}
		// The check without expanding agrees with the expansion.
		x := newRDBReader(context.Background(), bytes.NewReader(in), int64(len(in)))
		cerr := error(nil)
		if ulen > uint64(len(in))*lzfMaxExpansion {
			cerr = errLZF
		} else {
			cerr = lzfCheck(x, uint64(len(in)), ulen)
		}
		if (err == nil) != (cerr == nil) {
			t.Fatalf("expansion: %v; check: %v", err, cerr)
		}
	})
}

func FuzzManifest(f *testing.F) {
	good, _ := json.Marshal(Manifest{Backup: "b", Cluster: "c", Mode: machine.ModeCluster, Shards: []Shard{
		{Index: 0, File: "shard-0.rdb", Size: 100, SHA256: "aa0000000000000000000000000000000000000000000000000000000000000a", Slots: []machine.SlotRange{{Start: 0, End: 8191}}},
		{Index: 1, File: "shard-1.rdb", Size: 100, SHA256: "aa0000000000000000000000000000000000000000000000000000000000000a", Slots: []machine.SlotRange{{Start: 8192, End: 16383}}},
	}})
	f.Add(good)
	f.Add([]byte(`{"mode":"replication","shards":[{"index":0,"file":"../x","size":1,"sha256":"zz"}]}`))
	f.Add([]byte(`{"mode":"cluster","shards":[{"index":0,"file":"a","slots":[{"start":0,"end":9223372036854775807}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := parseManifest(body, "s3://b/c/")
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("a manifest's refusal that is not a content refusal: %v", err)
			}
			return
		}
		if err := checkManifest(m, m.Mode, len(m.Shards), "s3://b/c/"); err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, errMismatch) {
				t.Fatalf("a manifest's refusal of no known kind: %v", err)
			}
			return
		}
		for _, s := range m.Shards {
			if shardFile(s) != nil || (Result{Size: s.Size, SHA256: s.SHA256}).recorded() != nil {
				t.Fatalf("an accepted manifest with shard %+v", s)
			}
		}
	})
}
