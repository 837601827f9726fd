package backup

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"path"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// validate checks the snapshot stored under name before any node sees it, in every topology:
// first its size and sha256 against rec (and its own CRC-64), reading it through without
// parsing a byte of it; then, pinned to the object that read checked, its whole structure
// (readRDBKeys: every length bounded by what remains of the object, values read past and never
// kept, every LZF block checked as Valkey will expand it; in cluster mode only database 0, and
// every key hashing to one of slots). A node handed a file that fails here would allocate what
// it claims or stop on it, and restart into the same file. It returns the ETag checked and, in
// cluster mode, the lengths of the values a key-by-key load streams (largeValues).
func validate(ctx context.Context, store Store, name string, rec Result, cluster bool, slots []machine.SlotRange) (string, largeValues, error) {
	if err := rec.recorded(); err != nil {
		return "", nil, fmt.Errorf("%s: %w", store.Location(name), err)
	}
	etag, err := fetch(ctx, store, name, rec, "", io.Discard)
	if err != nil {
		return "", nil, err
	}
	v := rdbVisitor{cluster: cluster}
	var large largeValues
	if cluster {
		v.keyName = inSlots(slots)
		large = largeValues{}
		v.sized = large.record
	}
	if err := streamKeys(ctx, store, name, rec, etag, v, nil); err != nil {
		return "", nil, fmt.Errorf("%s: %w", store.Location(name), err)
	}
	return etag, large, nil
}

// recorded refuses a record a restore cannot check a file against: without its size and
// sha256, nothing says the file is the one the backup wrote.
func (r Result) recorded() error {
	if r.Size <= 0 {
		return fmt.Errorf("%w: the backup recorded no size for the file", ErrCorrupt)
	}
	if b, err := hex.DecodeString(r.SHA256); err != nil || len(b) != 32 {
		return fmt.Errorf("%w: the backup recorded %q as the file's sha256, not 64 hex digits", ErrCorrupt, r.SHA256)
	}
	return nil
}

// shardFile refuses a manifest's file name that is not a plain name in the backup's directory
// (a path reaching into another backup or out of the prefix).
func shardFile(s Shard) error {
	if s.File == "" || path.Base(s.File) != s.File || s.File == "." || s.File == ".." {
		return fmt.Errorf("%w: shard %d's file %q is not a file name in the backup's directory", ErrCorrupt, s.Index, s.File)
	}
	return nil
}
