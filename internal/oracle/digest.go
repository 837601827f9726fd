package oracle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	vk "github.com/valkey-io/valkey-go"
)

// Conn is a client or one of its dedicated connections (a cluster replica answers reads on a
// connection that said READONLY).
type Conn interface {
	B() vk.Builder
	Do(ctx context.Context, cmd vk.Completed) vk.ValkeyResult
	DoMulti(ctx context.Context, multi ...vk.Completed) []vk.ValkeyResult
}

// Digest hashes every key of the node c reaches with its DUMP (type, value and encoding, as
// the server serialises it), keys sorted, and returns the hash and the number of keys. Two data
// sets on servers of one version have one digest exactly when they hold the same keys and
// values. A set or hash in a hash table is hashed by its sorted content instead (and a hash's
// field expiries, where the server has them): the order of its DUMP is the table's, which
// depends on the process's random hash seed, so two servers holding the same set dump it
// differently.
func Digest(ctx context.Context, c Conn) (string, int, error) {
	var keys []string
	cursor := uint64(0)
	for {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Count(1000).Build()).AsScanEntry()
		if err != nil {
			return "", 0, err
		}
		keys = append(keys, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			break
		}
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		r := c.DoMulti(ctx, c.B().Dump().Key(k).Build(), c.B().ObjectEncoding().Key(k).Build(), c.B().Type().Key(k).Build())
		dump, err := r[0].ToString()
		if err != nil {
			return "", 0, fmt.Errorf("DUMP %s: %w", k, err)
		}
		enc, _ := r[1].ToString()
		typ, _ := r[2].ToString()
		if enc == "hashtable" && (typ == "set" || typ == "hash") {
			if dump, err = content(ctx, c, k, typ); err != nil {
				return "", 0, err
			}
		}
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(dump), dump)
	}
	return hex.EncodeToString(h.Sum(nil)), len(keys), nil
}

// content is a set's or hash's content in an order of its own: members sorted; fields sorted,
// each with its value and its expiry (Valkey 9; nothing on a server without field expiries).
func content(ctx context.Context, c Conn, k, typ string) (string, error) {
	var lines []string
	if typ == "set" {
		m, err := c.Do(ctx, c.B().Smembers().Key(k).Build()).AsStrSlice()
		if err != nil {
			return "", fmt.Errorf("SMEMBERS %s: %w", k, err)
		}
		lines = m
	} else {
		m, err := c.Do(ctx, c.B().Hgetall().Key(k).Build()).AsStrMap()
		if err != nil {
			return "", fmt.Errorf("HGETALL %s: %w", k, err)
		}
		for f, v := range m {
			line := fmt.Sprintf("%d:%s%d:%s", len(f), f, len(v), v)
			if at, err := c.Do(ctx, c.B().Arbitrary("HPEXPIRETIME").Keys(k).Args("FIELDS", "1", f).Build()).AsIntSlice(); err == nil && len(at) == 1 {
				line += fmt.Sprintf(" %d", at[0])
			}
			lines = append(lines, line)
		}
	}
	sort.Strings(lines)
	return typ + " " + strings.Join(lines, "\n"), nil
}
