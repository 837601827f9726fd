package valkey

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The data digest (machine.Valkey.Digest): what tells a bootstrap whether two nodes restarted
// from their append-only files, with as many keys each and no place in a history, hold the same
// data. Equal digests must mean the same data, and a digest that cannot be taken is "unknown",
// never a guess: the machine then falls back on key counts and says so.
//
// Valkey's own DEBUG DIGEST is the first choice (one command, no bound, the whole data set with
// expiry times, independent of the keys' order and encodings), but DEBUG is refused unless
// the server was started with enable-debug-command (off by default since Redis 7, in Valkey 8.0
// and 9.1 alike; the operator's pod template leaves it off, as it should: DEBUG can crash a
// node). Where it is refused the operator computes a digest of its own by scanning the keys:
// each key's type, value in a canonical form (a hash's fields, a set's members sorted; a
// list's and a sorted set's elements in their order) and absolute expiry time is hashed, and
// the keys' hashes are combined by XOR, so the order SCAN returns them in does not matter. A
// string's and a stream's value is its DUMP payload without the trailer (RDB version and
// checksum: a node of another version dumps the same value alike): a stream's groups and
// consumers are part of its value and DUMP carries them. The two kinds are told apart by their
// prefix ("debug:", "scan:"): they are never compared with each other.
//
// The scan is bounded in keys and in memory (the sizes Valkey estimates before a value is
// read): past either bound, with keys in a database other than 0 (the operator's connection
// stays on database 0), or when the data changes under the scan (a key vanishes, the count
// differs from INFO's), the digest is unknown.

const (
	digestDebug = "debug:"
	digestScan  = "scan:"
	// digestBatch is how many keys one pipelined round trip reads.
	digestBatch = 256
)

// digestBounds bound the operator's own digest: past them it is unknown.
type digestBounds struct {
	keys  int64 // keys in the node
	bytes int64 // memory of the values read, as MEMORY USAGE estimates it
}

// surveyDigestBounds are the survey's: a bootstrap's node of up to 100,000 keys and 256 MiB is
// read in a few seconds, while its writes are fenced anyway.
var surveyDigestBounds = digestBounds{keys: 100_000, bytes: 256 << 20}

// errNoDigest: the digest cannot be taken (bound passed, data changed, a type not read).
var errNoDigest = errors.New("no digest")

// wantsDigest says whether the survey takes a digest of a node: it holds keys at offset 0 (no
// place in a history) with client writes fenced and its data loaded. That is a node restarted
// from its append-only file that the operator has not opened yet: at the bootstrap of a cluster
// re-created on kept volumes, where the machine compares such nodes, or for a moment after a
// restart. A steady cluster's nodes are open or follow a primary at an offset, and are never
// digested.
func wantsDigest(v machine.Valkey) bool {
	return v.Keys > 0 && v.Offset == 0 && v.WritesFenced && !v.Loading
}

// digest is the data digest of the node at addr ("" when it cannot be taken). keys is its key
// count from INFO, onlyDB0 whether database 0 holds them all, dataset its data's memory
// (used_memory_dataset): a node past the bounds is not scanned at all, so that one that
// cannot be digested costs each survey one refused DEBUG and nothing more.
func (p *Pool) digest(ctx context.Context, addr string, keys, dataset int64, onlyDB0 bool, bounds digestBounds) string {
	d, _ := p.dataEvidence(ctx, addr, keys, dataset, onlyDB0, bounds)
	return d
}

// dataEvidence is the digest (as digest) and the key hashes (machine.Valkey.KeyHashes, nil
// when not read) of the node at addr, from one scan: the hashes are read within the same
// bounds as the operator's own digest, whether or not DEBUG DIGEST answers.
func (p *Pool) dataEvidence(ctx context.Context, addr string, keys, dataset int64, onlyDB0 bool, bounds digestBounds) (digest string, hashes []uint64) {
	scannable := onlyDB0 && dataset <= bounds.bytes
	_ = p.runFor(ctx, addr, p.bulkTimeout(3*int(min(keys, bounds.keys))), func(ctx context.Context, c vk.Client) error {
		digest, hashes = dataDigestAndKeys(ctx, c, keys, scannable, bounds)
		return nil
	})
	return digest, hashes
}

// dataDigest is DEBUG DIGEST where the node allows it, else the operator's own where scannable
// (database 0 holds every key, and the data is not known to pass the bounds).
func dataDigest(ctx context.Context, c vk.Client, keys int64, scannable bool, bounds digestBounds) string {
	d, _ := dataDigestAndKeys(ctx, c, keys, scannable, bounds)
	return d
}

// dataDigestAndKeys is dataDigest with the key hashes of the scan (nil when not scanned).
func dataDigestAndKeys(ctx context.Context, c vk.Client, keys int64, scannable bool, bounds digestBounds) (string, []uint64) {
	debug := ""
	if d, err := c.Do(ctx, c.B().Arbitrary("DEBUG").Args("DIGEST").Build()).ToString(); err == nil && d != "" {
		debug = digestDebug + d
	}
	if !scannable || keys > bounds.keys {
		return debug, nil
	}
	sums, err := scanKeys(ctx, c, keys, bounds.bytes)
	if err != nil {
		return debug, nil
	}
	if debug != "" {
		return debug, keyHashes(sums)
	}
	return scanDigestOf(keys, sums), keyHashes(sums)
}

// scanDigestOf combines the keys' hashes by XOR: the order SCAN returned them in does not
// matter.
func scanDigestOf(keys int64, sums [][sha256.Size]byte) string {
	var sum [sha256.Size]byte
	for _, kh := range sums {
		for j := range sum {
			sum[j] ^= kh[j]
		}
	}
	return fmt.Sprintf("%s%d:%s", digestScan, keys, hex.EncodeToString(sum[:]))
}

// keyHashes are the keys' hashes as the machine compares them (machine.CompareKeys): the first
// 64 bits of each, sorted. Two different keys or values collide with a chance of about 2^-64
// per pair looked up, which for two nodes of 100,000 keys is below 10^-9.
func keyHashes(sums [][sha256.Size]byte) []uint64 {
	out := make([]uint64, len(sums))
	for i, kh := range sums {
		out[i] = binary.BigEndian.Uint64(kh[:8])
	}
	slices.Sort(out)
	return out
}

// scanKeys hashes every key of database 0 with its type, value and expiry (see above), in the
// order SCAN returns them.
func scanKeys(ctx context.Context, c vk.Client, keys, maxBytes int64) ([][sha256.Size]byte, error) {
	seen := make(map[string]struct{}, keys)
	sums := make([][sha256.Size]byte, 0, keys)
	var bytes int64
	var cursor uint64
	for {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Count(digestBatch).Build()).AsScanEntry()
		if err != nil {
			return nil, err
		}
		var batch []string
		for _, k := range e.Elements {
			if _, ok := seen[k]; !ok {
				seen[k] = struct{}{}
				batch = append(batch, k)
			}
		}
		if int64(len(seen)) > keys {
			return nil, errNoDigest // keys were added under the scan
		}
		for len(batch) > 0 {
			n := min(len(batch), digestBatch)
			if err := digestKeys(ctx, c, batch[:n], &sums, &bytes, maxBytes); err != nil {
				return nil, err
			}
			batch = batch[n:]
		}
		cursor = e.Cursor
		if cursor == 0 {
			break
		}
	}
	if int64(len(seen)) != keys {
		return nil, errNoDigest
	}
	return sums, nil
}

// digestKeys appends the hashes of keys to sums, adding the sizes Valkey estimates for them to
// bytes first (and refusing past maxBytes, before any value is read).
func digestKeys(ctx context.Context, c vk.Client, keys []string, sums *[][sha256.Size]byte, bytes *int64, maxBytes int64) error {
	meta := make(vk.Commands, 0, 3*len(keys))
	for _, k := range keys {
		meta = append(meta, c.B().Type().Key(k).Build(), c.B().Pexpiretime().Key(k).Build(), c.B().MemoryUsage().Key(k).Build())
	}
	resps := c.DoMulti(ctx, meta...)
	types := make([]string, len(keys))
	expiries := make([]int64, len(keys))
	for i := range keys {
		t, err := resps[3*i].ToString()
		if err != nil {
			return err
		}
		if t == "none" {
			return errNoDigest // it vanished (expired) under the scan
		}
		exp, err := resps[3*i+1].AsInt64()
		if err != nil {
			return err
		}
		size, err := resps[3*i+2].AsInt64()
		if err != nil {
			return err
		}
		if *bytes += size; *bytes > maxBytes {
			return errNoDigest
		}
		types[i], expiries[i] = t, exp
	}
	reads := make(vk.Commands, len(keys))
	for i, k := range keys {
		cmd, err := readValue(c, k, types[i])
		if err != nil {
			return err
		}
		reads[i] = cmd
	}
	for i, r := range c.DoMulti(ctx, reads...) {
		v, err := canonicalValue(types[i], r)
		if err != nil {
			return err
		}
		h := sha256.New()
		writeField(h, []byte(keys[i]))
		writeField(h, []byte(types[i]))
		var exp [8]byte
		binary.BigEndian.PutUint64(exp[:], uint64(expiries[i]))
		h.Write(exp[:])
		for _, f := range v {
			writeField(h, []byte(f))
		}
		var kh [sha256.Size]byte
		h.Sum(kh[:0])
		*sums = append(*sums, kh)
	}
	return nil
}

// readValue is the command that reads key k's value of type t for the digest.
func readValue(c vk.Client, k, t string) (vk.Completed, error) {
	switch t {
	case "string", "stream":
		return c.B().Dump().Key(k).Build(), nil
	case "hash":
		return c.B().Hgetall().Key(k).Build(), nil
	case "set":
		return c.B().Smembers().Key(k).Build(), nil
	case "zset":
		return c.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build(), nil
	case "list":
		return c.B().Lrange().Key(k).Start(0).Stop(-1).Build(), nil
	}
	return vk.Completed{}, fmt.Errorf("%w: type %s", errNoDigest, t) // a module's type: not read
}

// canonicalValue is a value as the digest hashes it: the same data gives the same fields
// whatever its encoding or the order its elements were added in (where the order is not part
// of the value).
func canonicalValue(t string, r vk.ValkeyResult) ([]string, error) {
	switch t {
	case "string", "stream":
		d, err := r.ToString()
		if err != nil {
			return nil, err
		}
		// DUMP's payload ends in the RDB version (2 bytes) and a CRC64 (8 bytes).
		if len(d) < 10 {
			return nil, fmt.Errorf("%w: DUMP of %d bytes", errNoDigest, len(d))
		}
		return []string{d[:len(d)-10]}, nil
	case "hash":
		m, err := r.AsStrMap()
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, 2*len(m))
		for _, f := range sortedKeys(m) {
			out = append(out, f, m[f])
		}
		return out, nil
	case "set":
		s, err := r.AsStrSlice()
		if err != nil {
			return nil, err
		}
		sort.Strings(s)
		return s, nil
	case "zset":
		zs, err := r.AsZScores()
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, 2*len(zs))
		for _, z := range zs {
			out = append(out, z.Member, fmt.Sprint(z.Score))
		}
		return out, nil
	}
	return r.AsStrSlice() // a list, in its order
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writeField writes b with its length, so that no two sequences of fields hash alike.
func writeField(h interface{ Write([]byte) (int, error) }, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	_, _ = h.Write(n[:])
	_, _ = h.Write(b)
}

// onlyDB0 reports whether INFO keyspace lists no database but 0 (it lists only those that
// hold keys).
func onlyDB0(info map[string]string) bool {
	for k := range info {
		if numbered(k, "db") && k != "db0" {
			return false
		}
	}
	return true
}
