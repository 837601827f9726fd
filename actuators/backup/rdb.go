package backup

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// rdbCheck follows an RDB file as it streams by and says, at its end, whether it is a whole
// one: a known header ("REDIS" and a four-digit version, or "VALKEY" and three), and a trailer of
// the end opcode (0xff) and the CRC-64 of everything before it (zero when the server runs with
// rdbchecksum no). A truncated stream, a flipped byte or a stream of something else fails.
type rdbCheck struct {
	size   int64
	head   []byte
	crc    uint64 // over every byte except the last 8 seen so far
	last   byte   // the last byte folded into crc
	tail   [8]byte
	inTail int
}

const rdbEOF = 0xff

func (c *rdbCheck) Write(p []byte) (int, error) {
	c.size += int64(len(p))
	if len(c.head) < 9 {
		c.head = append(c.head, p[:min(len(p), 9-len(c.head))]...)
	}
	// Keep the last 8 bytes out of the checksum until the stream ends: they are the checksum.
	// Whatever falls out of that window is folded in one call (a byte at a time is 20× slower).
	total := c.inTail + len(p)
	if total <= len(c.tail) {
		c.inTail += copy(c.tail[c.inTail:], p)
		return len(p), nil
	}
	fold := total - len(c.tail)
	fromTail := min(c.inTail, fold)
	if fromTail > 0 {
		c.crc = crc64Jones(c.crc, c.tail[:fromTail])
		c.last = c.tail[fromTail-1]
	}
	fromP := fold - fromTail
	if fromP > 0 {
		c.crc = crc64Jones(c.crc, p[:fromP])
		c.last = p[fromP-1]
	}
	var next [8]byte
	k := copy(next[:], c.tail[fromTail:c.inTail])
	copy(next[k:], p[fromP:])
	c.tail, c.inTail = next, len(c.tail)
	return len(p), nil
}

// version is the RDB version the header names, or an error if it names none.
func (c *rdbCheck) version() (string, error) {
	switch {
	case len(c.head) >= 9 && string(c.head[:5]) == "REDIS" && digits(c.head[5:9]):
		return string(c.head[5:9]), nil
	case len(c.head) >= 9 && string(c.head[:6]) == "VALKEY" && digits(c.head[6:9]):
		return string(c.head[6:9]), nil
	}
	return "", fmt.Errorf("not an RDB file: it starts with %q", c.head)
}

func digits(b []byte) bool {
	for _, d := range b {
		if d < '0' || d > '9' {
			return false
		}
	}
	return true
}

// ErrCorrupt is what every refusal of a snapshot's content wraps: a size or sha256 other than
// the backup recorded, a bad header or checksum, a structure a node cannot load. The same object
// is refused again however often it is read: a caller does not retry it (a failed read of the
// store, or a deadline, does not wrap it).
var ErrCorrupt = errors.New("RDB check failed")

// done checks the stream that ended: its header, its end opcode and its checksum.
func (c *rdbCheck) done() error {
	if _, err := c.version(); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if c.inTail < 8 || c.size < 18 {
		return fmt.Errorf("%w: %d bytes, too short for an RDB file", ErrCorrupt, c.size)
	}
	// The byte before the checksum is the end opcode (the checksum covers it).
	if c.last != rdbEOF {
		return fmt.Errorf("%w: no end-of-file opcode before the checksum (truncated?)", ErrCorrupt)
	}
	want := binary.LittleEndian.Uint64(c.tail[:])
	if want != 0 && want != c.crc {
		return fmt.Errorf("%w: checksum %016x, the file says %016x", ErrCorrupt, c.crc, want)
	}
	return nil
}
