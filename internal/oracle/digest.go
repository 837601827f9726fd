package oracle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	vk "github.com/valkey-io/valkey-go"
)

// Digest hashes every key of the node c reaches with its DUMP (type, value and encoding, as
// the server serialises it), keys sorted, and returns the hash and the number of keys. Two data
// sets on servers of one version have one digest exactly when they hold the same keys and
// values.
func Digest(ctx context.Context, c vk.Client) (string, int, error) {
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
		dump, err := c.Do(ctx, c.B().Dump().Key(k).Build()).ToString()
		if err != nil {
			return "", 0, fmt.Errorf("DUMP %s: %w", k, err)
		}
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(dump), dump)
	}
	return hex.EncodeToString(h.Sum(nil)), len(keys), nil
}
