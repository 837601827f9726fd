package backup

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
)

// A cluster-mode node cannot be loaded through replication (Valkey refuses REPLICAOF in cluster
// mode), so its snapshot is replayed key by key with RESTORE, which takes a value in the DUMP
// format: the value exactly as an RDB file encodes it (type byte and body), the RDB version and
// a CRC-64. rdbKeys walks an RDB file and cuts it into those values without decoding them: it
// only has to know where each value ends.

// rdbKey is one key of an RDB file, ready for RESTORE.
type rdbKey struct {
	Key []byte
	// Value is the type byte and the value's encoding, as the file holds them.
	Value []byte
	// ExpireAt is the key's expiry in Unix milliseconds (0: none).
	ExpireAt int64
	// Idle (LRU seconds) and Freq (LFU counter) are the eviction hints the file carries, -1
	// when absent.
	Idle int64
	Freq int
	// Version is the file's RDB version.
	Version uint16
}

// dumpPayload is the key's value as RESTORE takes it.
func (k rdbKey) dumpPayload() []byte {
	out := make([]byte, 0, len(k.Value)+10)
	out = append(out, k.Value...)
	out = binary.LittleEndian.AppendUint16(out, k.Version)
	return binary.LittleEndian.AppendUint64(out, crc64Jones(0, out))
}

// restoreArgs are the arguments of RESTORE (after the command's name) that recreate k as the
// file holds it: its absolute expiry, its value, and its eviction hints.
func (k rdbKey) restoreArgs() []string {
	return append([]string{string(k.Key), strconv.FormatInt(k.ExpireAt, 10), string(k.dumpPayload())}, k.restoreOptions()...)
}

// restoreOptions are the arguments of RESTORE after the value. REPLACE: a retried load meets the
// keys of the attempt before.
func (k rdbKey) restoreOptions() []string {
	args := []string{"REPLACE"}
	if k.ExpireAt > 0 {
		args = append(args, "ABSTTL")
	}
	if k.Idle >= 0 {
		args = append(args, "IDLETIME", strconv.FormatInt(k.Idle, 10))
	}
	if k.Freq >= 0 {
		args = append(args, "FREQ", strconv.Itoa(k.Freq))
	}
	return args
}

// rdbVisitor receives what an RDB file holds, in order.
type rdbVisitor struct {
	// keyName receives each key's name before its value is read (to refuse it early).
	keyName func(name []byte) error
	// key receives each key with its value; when nil, values are read past and never kept.
	key func(rdbKey) error
	// stream, when set, is asked for each key (its value not read yet; at is the offset of its
	// type byte in the file) whether its value goes out as it is read instead of being held:
	// it returns where the value's bytes go (type byte first, in pieces of about a chunk at
	// most), closed once the value was read whole, or nil for key to receive the value.
	stream func(k rdbKey, at int64) (io.WriteCloser, error)
	// sized, when set, receives each value's length (type byte and encoding) and the offset of
	// its type byte, once it was read past.
	sized func(at, n int64)
	// function receives a function library's code (FUNCTION LOAD).
	function func(code []byte) error
	// cluster refuses keys outside database 0 (cluster mode has no other).
	cluster bool
}

// RDB opcodes and value types (Valkey's rdb.h).
const (
	rdbOpSlotInfo       = 244
	rdbOpFunction2      = 245
	rdbOpFunctionPreGA  = 246
	rdbOpModuleAux      = 247
	rdbOpIdle           = 248
	rdbOpFreq           = 249
	rdbOpAux            = 250
	rdbOpResizeDB       = 251
	rdbOpExpireTimeMS   = 252
	rdbOpExpireTime     = 253
	rdbOpSelectDB       = 254
	rdbTypeStreams      = 15
	rdbTypeStreams2     = 19
	rdbTypeStreams3     = 21
	rdbTypeModulePreGA  = 6
	rdbTypeModule2      = 7
	rdbTypeHashFieldTTL = 22
)

// maxDatabases is Valkey's default number of databases, which the operator's nodes run with: a
// node stops when a file selects one beyond it.
const maxDatabases = 16

// readRDBKeys walks the RDB file r, size bytes long, and hands every key and function library to
// v. It returns the file's RDB version (the header's). Every length in the file is bounded by
// what remains of it (rdbReader); module values, data types and opcodes it does not know,
// databases a node does not have and bytes after the end are refused by name, before v sees
// anything after them. The trailing checksum is not checked here: the caller verified the file.
// A refusal of the content wraps ErrCorrupt; a failed read or ctx's end does not.
func readRDBKeys(ctx context.Context, r io.Reader, size int64, v rdbVisitor) (uint16, error) {
	x := newRDBReader(ctx, r, size)
	head, err := x.small(8, "the header")
	if err != nil {
		return 0, fmt.Errorf("RDB header: %w", err)
	}
	var digits []byte
	switch {
	case string(head[:5]) == "REDIS":
		digits = append([]byte(nil), head[5:]...)
	case string(head[:6]) == "VALKEY":
		digits = append([]byte(nil), head[6:]...)
	default:
		return 0, fmt.Errorf("%w: not an RDB file (no REDIS or VALKEY header)", ErrCorrupt)
	}
	last, err := x.byte()
	if err != nil {
		return 0, fmt.Errorf("RDB header: %w", err)
	}
	digits = append(digits, last)
	ver, err := strconv.ParseUint(string(digits), 10, 16)
	if err != nil {
		return 0, fmt.Errorf("%w: RDB header: version %q", ErrCorrupt, digits)
	}
	fresh := rdbKey{Idle: -1, Freq: -1, Version: uint16(ver)}
	pending := fresh
	db := uint64(0)
	for n := 0; ; n++ {
		if err := x.alive(); err != nil {
			return 0, err
		}
		op, err := x.byte()
		if err != nil {
			return 0, fmt.Errorf("RDB after %d item(s): %w", n, err)
		}
		switch op {
		case rdbEOF:
			// The checksum follows (8 bytes), and nothing else: Valkey stops at the end opcode
			// and would take a file with more for one it loaded whole.
			if rest := x.remain(); rest != 8 {
				return 0, x.refuse("the end-of-file opcode is followed by %d bytes, not the 8 of the checksum", rest)
			}
			return uint16(ver), nil
		case rdbOpAux:
			err = seq(x.skipString, x.skipString)()
		case rdbOpResizeDB:
			err = x.lengths(2)
		case rdbOpSlotInfo:
			err = x.lengths(3) // slot, keys, keys with an expiry: a sizing hint
		case rdbOpSelectDB:
			if db, _, err = x.length(); err == nil && db >= maxDatabases {
				err = x.refuse("the file selects database %d, a node has %d", db, maxDatabases)
			}
		case rdbOpExpireTimeMS:
			var b []byte
			if b, err = x.small(8, "an expiry"); err == nil {
				pending.ExpireAt = int64(binary.LittleEndian.Uint64(b))
			}
		case rdbOpExpireTime:
			var b []byte
			if b, err = x.small(4, "an expiry"); err == nil {
				pending.ExpireAt = int64(binary.LittleEndian.Uint32(b)) * 1000
			}
		case rdbOpIdle:
			var idle uint64
			idle, _, err = x.length()
			pending.Idle = int64(min(idle, math.MaxInt64))
		case rdbOpFreq:
			var f byte
			f, err = x.byte()
			pending.Freq = int(f)
		case rdbOpFunction2:
			var code []byte
			if code, err = x.string(); err == nil && v.function != nil {
				err = v.function(code)
			}
		case rdbOpFunctionPreGA, rdbOpModuleAux:
			return 0, x.refuse("module or pre-release function data (opcode %d): the operator's nodes load no modules", op)
		default:
			if v.cluster && db != 0 {
				return 0, fmt.Errorf("%w: the RDB holds keys of database %d: cluster mode has database 0 only", ErrCorrupt, db)
			}
			k := pending
			pending = fresh
			at := x.off - 1
			if k.Key, err = x.string(); err != nil {
				return 0, fmt.Errorf("RDB key %d: %w", n, err)
			}
			if v.keyName != nil {
				if err := v.keyName(k.Key); err != nil {
					return 0, err
				}
			}
			var sink io.WriteCloser
			if v.stream != nil {
				if sink, err = v.stream(k, at); err != nil {
					return 0, err
				}
			}
			// The value is kept only for a caller that takes it, and only a chunk of it at a
			// time when it goes to a sink.
			start := x.off
			if sink != nil && cap(x.rec) < chunk+8 {
				// The most spill leaves unspilled: a chunk, or a little less and a small read.
				x.rec = make([]byte, 0, chunk+8)
			}
			x.rec = append(x.rec[:0], op)
			x.recording, x.sink = v.key != nil || sink != nil, sink
			err = x.skipValue(op)
			if err == nil {
				err = x.spill(true)
			}
			x.recording, x.sink = false, nil
			if err != nil {
				return 0, fmt.Errorf("RDB value of key %q: %w", k.Key, err)
			}
			if v.sized != nil {
				v.sized(at, 1+x.off-start)
			}
			if sink != nil {
				if err := sink.Close(); err != nil {
					return 0, err
				}
				continue
			}
			if v.key != nil {
				k.Value = x.rec
				if err := v.key(k); err != nil {
					return 0, err
				}
			}
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("RDB opcode %d: %w", op, err)
		}
	}
}
