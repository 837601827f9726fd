package backup

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// The RDB file a restore reads comes from outside the operator (anyone who can write to the
// bucket can write one, with a manifest that matches it), so rdbReader believes no length it
// reads: every length is bounded by what remains of the object before anything is read or
// allocated for it, values are read through in chunks (or kept, for RESTORE, only as far as the
// object really holds them), and LZF blocks are checked as Valkey will expand them without
// expanding them. A file that fails is refused with the offset and what it claimed: loaded into
// a node, the same file makes valkey-server allocate what it claims or stop on the corruption,
// and the node restarts into the same file again.

// rdbReader reads an RDB file of a known size; while recording, every byte read is kept in rec.
type rdbReader struct {
	ctx context.Context
	src *bufio.Reader
	// off is how many bytes were read, size the object's (verified) size.
	off, size int64
	rec       []byte
	recording bool
	// sink, when set while recording, takes what was recorded whenever it reaches a chunk
	// (spill), so that a value it takes is never held whole.
	sink    io.Writer
	scratch [8]byte
	// reads counts reads since the last look at ctx.
	reads int
}

// chunk is how much of a long string is read (and, recording, allocated) at a time.
const chunk = 1 << 20

func newRDBReader(ctx context.Context, r io.Reader, size int64) *rdbReader {
	// A small file needs no buffer of a chunk.
	br := bufio.NewReaderSize(r, int(max(min(size, chunk), 16)))
	return &rdbReader{ctx: ctx, src: br, size: size}
}

// refuse is a refusal of the file's content at the current offset.
func (x *rdbReader) refuse(format string, a ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrCorrupt, x.off, fmt.Sprintf(format, a...))
}

// remain is how many bytes of the object are left.
func (x *rdbReader) remain() uint64 {
	if x.off >= x.size {
		return 0
	}
	return uint64(x.size - x.off)
}

// claim refuses a length of n bytes (what says whose) that the rest of the object cannot hold.
func (x *rdbReader) claim(n uint64, what string) error {
	if n > x.remain() {
		return x.refuse("%s claims %d bytes, only %d remain in the file", what, n, x.remain())
	}
	return nil
}

// alive says whether the caller still wants the read (its context), now and then.
func (x *rdbReader) alive() error {
	if x.reads++; x.reads < 4096 {
		return nil
	}
	x.reads = 0
	return x.ctx.Err()
}

func (x *rdbReader) byte() (byte, error) {
	if x.remain() == 0 {
		return 0, x.refuse("the file ends before its end-of-file opcode")
	}
	b, err := x.src.ReadByte()
	if err != nil {
		return 0, noEOF(err)
	}
	x.off++
	if x.recording {
		x.rec = append(x.rec, b)
		if err := x.spill(false); err != nil {
			return 0, err
		}
	}
	return b, nil
}

// spill hands what was recorded to the sink once it holds a chunk, or all of it (at the end of a
// value); without a sink it keeps it.
func (x *rdbReader) spill(all bool) error {
	if x.sink == nil || len(x.rec) == 0 || (!all && len(x.rec) < chunk) {
		return nil
	}
	_, err := x.sink.Write(x.rec)
	x.rec = x.rec[:0]
	return err
}

// small reads n (at most 8) bytes into a scratch buffer, valid until the next read.
func (x *rdbReader) small(n int, what string) ([]byte, error) {
	if err := x.claim(uint64(n), what); err != nil {
		return nil, err
	}
	b := x.scratch[:n]
	if _, err := io.ReadFull(x.src, b); err != nil {
		return nil, noEOF(err)
	}
	x.off += int64(n)
	if x.recording {
		x.rec = append(x.rec, b...)
		if err := x.spill(false); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// discard reads past n bytes (recorded when recording), a chunk at a time.
func (x *rdbReader) discard(n uint64, what string) error {
	if err := x.claim(n, what); err != nil {
		return err
	}
	for n > 0 {
		if err := x.ctx.Err(); err != nil {
			return err
		}
		k := min(n, chunk)
		if x.recording {
			if x.sink != nil {
				// What goes to a sink is held a chunk at most (spill leaves less).
				k = min(k, uint64(chunk-len(x.rec)))
			}
			start := len(x.rec)
			x.rec = slices.Grow(x.rec, int(k))[:start+int(k)]
			if _, err := io.ReadFull(x.src, x.rec[start:]); err != nil {
				return noEOF(err)
			}
			if err := x.spill(false); err != nil {
				return err
			}
		} else if _, err := x.src.Discard(int(k)); err != nil {
			return noEOF(err)
		}
		x.off += int64(k)
		n -= k
	}
	return nil
}

// bytes reads n bytes into a new slice, which grows with what is read (never ahead of it).
func (x *rdbReader) bytes(n uint64, what string) ([]byte, error) {
	start := len(x.rec)
	was := x.recording
	x.recording = true
	err := x.discard(n, what)
	x.recording = was
	out := slices.Clone(x.rec[start:])
	if !was {
		x.rec = x.rec[:start]
	}
	return out, err
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
		p, err := x.small(4, "a 32-bit length")
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(p)), false, nil
	case 0x81:
		p, err := x.small(8, "a 64-bit length")
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(p), false, nil
	}
	return 0, false, x.refuse("unknown length encoding 0x%02x", b)
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

// lzfHead reads an LZF string's compressed and expanded lengths, refusing what the rest of the
// file, or LZF itself, cannot hold.
func (x *rdbReader) lzfHead() (clen, ulen uint64, err error) {
	if clen, _, err = x.length(); err != nil {
		return 0, 0, err
	}
	if ulen, _, err = x.length(); err != nil {
		return 0, 0, err
	}
	if err := x.claim(clen, "an LZF string"); err != nil {
		return 0, 0, err
	}
	if clen == 0 || ulen == 0 || ulen > clen*lzfMaxExpansion {
		return 0, 0, x.refuse("an LZF string of %d bytes claims to expand to %d (LZF expands at most %d times)", clen, ulen, lzfMaxExpansion)
	}
	return clen, ulen, nil
}

// string reads a string, decoding integer and LZF encodings.
func (x *rdbReader) string() ([]byte, error) {
	n, encoded, err := x.length()
	if err != nil {
		return nil, err
	}
	if !encoded {
		return x.bytes(n, "a string")
	}
	switch n {
	case 0, 1, 2:
		b, err := x.small(1<<n, "an integer")
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
		clen, ulen, err := x.lzfHead()
		if err != nil {
			return nil, err
		}
		at := x.off
		c, err := x.bytes(clen, "an LZF string")
		if err != nil {
			return nil, err
		}
		out, err := lzfDecompress(c, ulen)
		if err != nil {
			return nil, fmt.Errorf("%w: at byte %d: %v", ErrCorrupt, at, err)
		}
		return out, nil
	}
	return nil, x.refuse("unknown string encoding %d", n)
}

// skipString reads past a string without keeping it; an LZF string is checked as Valkey will
// expand it (lzfCheck), without expanding it.
func (x *rdbReader) skipString() error {
	n, encoded, err := x.length()
	if err != nil {
		return err
	}
	if !encoded {
		return x.discard(n, "a string")
	}
	switch n {
	case 0, 1, 2:
		_, err = x.small(1<<n, "an integer")
		return err
	case 3:
		clen, ulen, err := x.lzfHead()
		if err != nil {
			return err
		}
		at := x.off
		if err := lzfCheck(x, clen, ulen); err != nil {
			if errors.Is(err, errLZF) {
				return fmt.Errorf("%w: at byte %d: %v", ErrCorrupt, at, err)
			}
			return err
		}
		return nil
	}
	return x.refuse("unknown string encoding %d", n)
}

// items reads past a collection: its length, then that many items, each made of the parts
// (each at least a byte: a count the rest of the file cannot hold is refused at once).
func (x *rdbReader) items(parts ...func() error) error {
	n, _, err := x.length()
	if err != nil {
		return err
	}
	if n > x.remain() {
		return x.refuse("a collection claims %d items, only %d bytes remain in the file", n, x.remain())
	}
	item := seq(parts...)
	for range n {
		if err := x.alive(); err != nil {
			return err
		}
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
	return func() error { return x.discard(n, "a fixed-size field") }
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
			err = x.discard(uint64(l), "a score")
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
		return x.refuse("a module value (type %d): the operator's nodes load no modules", t)
	}
	return x.refuse("unknown value type %d (a newer Valkey's?)", t)
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
		if err != nil {
			return err
		}
		if pel > x.remain()/16 {
			return x.refuse("a consumer claims %d pending entries, only %d bytes remain in the file", pel, x.remain())
		}
		return x.discard(pel*16, "a consumer's pending entries")
	})
	return x.items(x.skipString, x.skipLengths(lastID),
		func() error { return x.items(x.skip(16+8), x.skipLengths(1)) },
		func() error { return x.items(consumer) })
}
