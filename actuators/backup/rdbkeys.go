package backup

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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
// file holds it: its absolute expiry, its value, and its eviction hints. REPLACE: a retried
// load meets the keys of the attempt before.
func (k rdbKey) restoreArgs() []string {
	args := []string{string(k.Key), strconv.FormatInt(k.ExpireAt, 10), string(k.dumpPayload()), "REPLACE"}
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
	key func(rdbKey) error
	// function receives a function library's code (FUNCTION LOAD).
	function func(code []byte) error
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

// readRDBKeys walks the RDB file r and hands every key and function library to v. It returns
// the file's RDB version (the header's). Keys must be in database 0 (cluster mode has no
// other); module values and data types it does not know are refused by name, before v sees
// anything after them. The trailing checksum is not checked here: the caller verified the file.
func readRDBKeys(r io.Reader, v rdbVisitor) (uint16, error) {
	x := &rdbReader{r: bufio.NewReaderSize(r, 1<<20)}
	var head [9]byte
	if _, err := io.ReadFull(x.r, head[:]); err != nil {
		return 0, fmt.Errorf("RDB header: %w", err)
	}
	var digits []byte
	switch {
	case string(head[:5]) == "REDIS":
		digits = head[5:]
	case string(head[:6]) == "VALKEY":
		digits = head[6:]
	default:
		return 0, errors.New("not an RDB file (no REDIS or VALKEY header)")
	}
	ver, err := strconv.ParseUint(string(digits), 10, 16)
	if err != nil {
		return 0, fmt.Errorf("RDB header: version %q", digits)
	}
	fresh := rdbKey{Idle: -1, Freq: -1, Version: uint16(ver)}
	pending := fresh
	db := uint64(0)
	for n := 0; ; n++ {
		op, err := x.byte()
		if err != nil {
			return 0, fmt.Errorf("RDB after %d item(s): %w", n, err)
		}
		switch op {
		case rdbEOF:
			return uint16(ver), nil
		case rdbOpAux:
			err = seq(x.skipString, x.skipString)()
		case rdbOpResizeDB:
			err = x.lengths(2)
		case rdbOpSlotInfo:
			err = x.lengths(3) // slot, keys, keys with an expiry: a sizing hint
		case rdbOpSelectDB:
			db, _, err = x.length()
		case rdbOpExpireTimeMS:
			var b []byte
			if b, err = x.full(8); err == nil {
				pending.ExpireAt = int64(binary.LittleEndian.Uint64(b))
			}
		case rdbOpExpireTime:
			var b []byte
			if b, err = x.full(4); err == nil {
				pending.ExpireAt = int64(binary.LittleEndian.Uint32(b)) * 1000
			}
		case rdbOpIdle:
			var idle uint64
			idle, _, err = x.length()
			pending.Idle = int64(idle)
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
			return 0, fmt.Errorf("the RDB holds module or pre-release function data (opcode %d): not restorable key by key", op)
		default:
			if db != 0 {
				return 0, fmt.Errorf("the RDB holds keys of database %d: cluster mode has database 0 only", db)
			}
			k := pending
			pending = fresh
			if k.Key, err = x.string(); err != nil {
				return 0, fmt.Errorf("RDB key %d: %w", n, err)
			}
			x.rec = append(x.rec[:0], op)
			x.recording = true
			err = x.skipValue(op)
			x.recording = false
			if err != nil {
				return 0, fmt.Errorf("RDB value of key %q: %w", k.Key, err)
			}
			k.Value = x.rec
			if v.key != nil {
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

// rdbReader reads an RDB file; while recording, every byte read is kept in rec.
type rdbReader struct {
	r         *bufio.Reader
	rec       []byte
	recording bool
}

func (x *rdbReader) byte() (byte, error) {
	b, err := x.r.ReadByte()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && x.recording {
		x.rec = append(x.rec, b)
	}
	return b, err
}

// full reads n bytes. The slice is valid until the next read.
func (x *rdbReader) full(n uint64) ([]byte, error) {
	if n > 1<<40 {
		return nil, fmt.Errorf("implausible length %d", n)
	}
	if x.recording {
		start := len(x.rec)
		x.rec = append(x.rec, make([]byte, n)...)
		if _, err := io.ReadFull(x.r, x.rec[start:]); err != nil {
			return nil, noEOF(err)
		}
		return x.rec[start:], nil
	}
	b := make([]byte, n)
	_, err := io.ReadFull(x.r, b)
	return b, noEOF(err)
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// length reads a length; encoded reports the special string encodings (the value is then the
// encoding: 0-2 an integer of 1, 2 or 4 bytes, 3 LZF).
func (x *rdbReader) length() (n uint64, encoded bool, err error) {
	b, err := x.byte()
	if err != nil {
		return 0, false, err
	}
	switch b >> 6 {
	case 0:
		return uint64(b & 0x3f), false, nil
	case 1:
		c, err := x.byte()
		return uint64(b&0x3f)<<8 | uint64(c), false, err
	case 3:
		return uint64(b & 0x3f), true, nil
	}
	switch b {
	case 0x80:
		p, err := x.full(4)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(p)), false, nil
	case 0x81:
		p, err := x.full(8)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(p), false, nil
	}
	return 0, false, fmt.Errorf("unknown length encoding 0x%02x", b)
}

// lengths reads past k lengths.
func (x *rdbReader) lengths(k int) error {
	for range k {
		if _, _, err := x.length(); err != nil {
			return err
		}
	}
	return nil
}

// string reads a string, decoding integer and LZF encodings.
func (x *rdbReader) string() ([]byte, error) {
	n, encoded, err := x.length()
	if err != nil {
		return nil, err
	}
	if !encoded {
		b, err := x.full(n)
		return append([]byte(nil), b...), err
	}
	switch n {
	case 0, 1, 2:
		b, err := x.full(1 << n)
		if err != nil {
			return nil, err
		}
		var i int64
		switch n {
		case 0:
			i = int64(int8(b[0]))
		case 1:
			i = int64(int16(binary.LittleEndian.Uint16(b)))
		default:
			i = int64(int32(binary.LittleEndian.Uint32(b)))
		}
		return strconv.AppendInt(nil, i, 10), nil
	case 3:
		clen, _, err := x.length()
		if err != nil {
			return nil, err
		}
		ulen, _, err := x.length()
		if err != nil {
			return nil, err
		}
		c, err := x.full(clen)
		if err != nil {
			return nil, err
		}
		return lzfDecompress(c, ulen)
	}
	return nil, fmt.Errorf("unknown string encoding %d", n)
}

// skipString reads past a string without decoding it.
func (x *rdbReader) skipString() error {
	n, encoded, err := x.length()
	if err != nil {
		return err
	}
	if !encoded {
		_, err = x.full(n)
		return err
	}
	switch n {
	case 0, 1, 2:
		_, err = x.full(1 << n)
		return err
	case 3:
		clen, _, err := x.length()
		if err == nil {
			_, _, err = x.length()
		}
		if err == nil {
			_, err = x.full(clen)
		}
		return err
	}
	return fmt.Errorf("unknown string encoding %d", n)
}

// items reads past a collection: its length, then that many items, each made of the parts.
func (x *rdbReader) items(parts ...func() error) error {
	n, _, err := x.length()
	if err != nil {
		return err
	}
	item := seq(parts...)
	for range n {
		if err := item(); err != nil {
			return err
		}
	}
	return nil
}

// seq runs steps in order, up to the first that fails.
func seq(steps ...func() error) func() error {
	return func() error {
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	}
}

// skip reads past n bytes; skipLengths past k lengths.
func (x *rdbReader) skip(n uint64) func() error {
	return func() error { _, err := x.full(n); return err }
}

func (x *rdbReader) skipLengths(k int) func() error {
	return func() error { return x.lengths(k) }
}

// skipValue reads past the value of type t (the type byte was read).
func (x *rdbReader) skipValue(t byte) error {
	// A zset's score in the old format: a length byte, 253-255 for NaN and the infinities.
	oldScore := func() error {
		l, err := x.byte()
		if err == nil && l < 253 {
			_, err = x.full(uint64(l))
		}
		return err
	}
	switch t {
	case 0, 9, 10, 11, 12, 13, 16, 17, 20: // a string, or one encoded blob
		return x.skipString()
	case 1, 2, 14: // list, set, quicklist: strings
		return x.items(x.skipString)
	case 3: // zset: member, old-format score
		return x.items(x.skipString, oldScore)
	case 4: // hash: field, value
		return x.items(x.skipString, x.skipString)
	case 5: // zset: member, binary double
		return x.items(x.skipString, x.skip(8))
	case 18: // quicklist 2: container kind, node
		return x.items(x.skipLengths(1), x.skipString)
	case rdbTypeHashFieldTTL: // hash with field expiries (Valkey 9): field, value, expiry
		return x.items(x.skipString, x.skipString, x.skip(8))
	case rdbTypeStreams, rdbTypeStreams2, rdbTypeStreams3:
		return x.skipStream(t)
	case rdbTypeModulePreGA, rdbTypeModule2:
		return errors.New("a module value: not restorable by the operator")
	}
	return fmt.Errorf("unknown value type %d (a newer Valkey's?)", t)
}

// skipStream reads past a stream (rdbLoadObject's stream branch).
func (x *rdbReader) skipStream(t byte) error {
	v2, v3 := t >= rdbTypeStreams2, t >= rdbTypeStreams3
	// Listpacks: the master ID, the listpack.
	if err := x.items(x.skipString, x.skipString); err != nil {
		return err
	}
	// Length, last ID; from version 2 the first ID, the max deleted ID and entries added.
	meta := 3
	if v2 {
		meta += 5
	}
	if err := x.lengths(meta); err != nil {
		return err
	}
	// Consumer groups: name, last delivered ID (and from version 2 entries read), pending
	// entries (raw ID, delivery time, delivery count), consumers.
	lastID := 2
	if v2 {
		lastID++
	}
	// A consumer: name, seen time (and from version 3 active time), its pending IDs.
	times := uint64(8)
	if v3 {
		times += 8
	}
	consumer := seq(x.skipString, x.skip(times), func() error {
		pel, _, err := x.length()
		if err == nil {
			_, err = x.full(pel * 16)
		}
		return err
	})
	return x.items(x.skipString, x.skipLengths(lastID),
		func() error { return x.items(x.skip(16+8), x.skipLengths(1)) },
		func() error { return x.items(consumer) })
}

// lzfDecompress expands an LZF block (Valkey's lzf_d) to ulen bytes.
func lzfDecompress(in []byte, ulen uint64) ([]byte, error) {
	if ulen > 1<<32 {
		return nil, fmt.Errorf("implausible LZF length %d", ulen)
	}
	out := make([]byte, 0, ulen)
	bad := errors.New("corrupt LZF data")
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 { // a literal run of ctrl+1 bytes
			n := ctrl + 1
			if i+n > len(in) {
				return nil, bad
			}
			out = append(out, in[i:i+n]...)
			i += n
			continue
		}
		n := ctrl >> 5 // a back reference
		if n == 7 {
			if i >= len(in) {
				return nil, bad
			}
			n += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, bad
		}
		ref := len(out) - (ctrl&0x1f)<<8 - int(in[i]) - 1
		i++
		if ref < 0 {
			return nil, bad
		}
		for j := 0; j < n+2; j++ {
			out = append(out, out[ref+j])
		}
	}
	if uint64(len(out)) != ulen {
		return nil, bad
	}
	return out, nil
}
