package backup

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A value of an RDB file can be as large as Valkey allows (512 MB by default), and the operator
// runs under a memory limit far smaller than what a file holds. A cluster-mode load therefore
// sends a large value to the node as it reads it from the store: RESTORE is written by hand on a
// connection of its own, with the payload's length first (measured when the file was checked,
// largeValues), then the value's bytes as they arrive, then the RDB version and the CRC-64
// computed on the way. Nothing more than a chunk of the value is held at a time.

// streamThreshold is the serialized size from which a value is streamed rather than held. At
// 1 MiB a value costs the pipelined path (which copies it into a command and keeps up to
// replayBatchBytes of them) a few MiB at most, and a streamed value costs one round trip and
// a flush of the batch, small beside the time its megabyte takes to cross the network. It is
// also the reader's chunk: a streamed value is never held in more than the pieces the reader
// reads anyway. The check records one length per streamed value, at most the file's size
// divided by the threshold.
const streamThreshold = chunk

// largeValues are the lengths of the values a file holds of at least streamThreshold bytes,
// by the offset of their type byte, as the check read them: the load, reading the object the
// check pinned, finds every one at the same place.
type largeValues map[int64]int64

// record keeps the length n of the value at offset at if it is large.
func (l largeValues) record(at, n int64) {
	if n >= streamThreshold {
		l[at] = n
	}
}

// restoreConn is a connection of its own to the node a snapshot is replayed into,
// authenticated as the operator's user, over which large values are RESTOREd as they are read.
type restoreConn struct {
	conn *idleConn
	w    *bufio.Writer
	r    *bufio.Reader
	stop func() bool
}

// restoreIdle bounds how long a write or the node's answer may take: the node reads a value as
// fast as it arrives, and loads one of 512 MB within seconds.
const restoreIdle = 2 * time.Minute

// dialRestore connects to target (over TLS when it says so) as the operator's user. The
// connection ends when ctx does.
func dialRestore(ctx context.Context, target Target) (*restoreConn, error) {
	conn, err := dialNode(ctx, nil, target.TLS, target.Addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	idle := &idleConn{Conn: conn, ctx: ctx, idle: restoreIdle}
	c := &restoreConn{conn: idle, w: bufio.NewWriterSize(idle, 64<<10), r: bufio.NewReaderSize(idle, 4096), stop: context.AfterFunc(ctx, idle.abort)}
	if err := send(c.w, "AUTH", target.User, target.Password); err != nil {
		c.close()
		return nil, err
	}
	if err := c.answer(); err != nil {
		c.close()
		return nil, fmt.Errorf("AUTH as %s on the connection for large values: %w", target.User, err)
	}
	return c, nil
}

func (c *restoreConn) close() {
	c.stop()
	_ = c.conn.Close()
}

// answer flushes what was written and reads the node's answer: +OK, or its error.
func (c *restoreConn) answer() error {
	if err := c.w.Flush(); err != nil {
		return c.refused(err)
	}
	line, err := readLine(c.r)
	switch {
	case err != nil:
		return err
	case strings.HasPrefix(line, "-"):
		return fmt.Errorf("%s", line[1:])
	case line != "+OK":
		return fmt.Errorf("unexpected answer %q", line)
	}
	return nil
}

// refused is a failed write, with the node's reason when it gave one before it closed the
// connection (a value beyond its proto-max-bulk-len, for one). The connection is of no more use:
// the reason is waited for a second at most.
func (c *restoreConn) refused(err error) error {
	c.conn.mu.Lock()
	c.conn.idle = time.Second
	c.conn.mu.Unlock()
	if line, rerr := readLine(c.r); rerr == nil && strings.HasPrefix(line, "-") {
		return fmt.Errorf("%w (the node: %s)", err, line[1:])
	}
	return err
}

// restore begins RESTORE of k, whose value (type byte and encoding, as the file holds it) is n
// bytes: the value's bytes are written to what it returns, whose Close ends the command and
// reads the node's answer.
func (c *restoreConn) restore(k rdbKey, n int64) *streamedValue {
	args := append([]string{"RESTORE", string(k.Key), strconv.FormatInt(k.ExpireAt, 10)}, k.restoreOptions()...)
	// The payload is the third argument: the command's length counts it, its own bytes go
	// between the arguments before it and the options after it.
	fmt.Fprintf(c.w, "*%d\r\n", len(args)+1)
	for _, a := range args[:3] {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
	fmt.Fprintf(c.w, "$%d\r\n", n+dumpTrailer)
	return &streamedValue{c: c, left: n, version: k.Version, options: args[3:]}
}

// dumpTrailer is what a DUMP payload holds after the value: the RDB version (2 bytes) and the
// CRC-64 of everything before it (8 bytes).
const dumpTrailer = 10

// streamedValue is the payload of one RESTORE under way.
type streamedValue struct {
	c *restoreConn
	// left is how many bytes of the value are still to come.
	left    int64
	crc     uint64
	version uint16
	options []string
	err     error
}

func (s *streamedValue) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if int64(len(p)) > s.left {
		// The object is pinned to the one checked: this is not the value the check measured.
		s.err = fmt.Errorf("%w: the value is longer than the %d bytes its check measured", ErrCorrupt, s.left)
		return 0, s.err
	}
	s.crc = crc64Jones(s.crc, p)
	n, err := s.c.w.Write(p)
	s.left -= int64(n)
	if err != nil {
		s.err = s.c.refused(err)
	}
	return n, s.err
}

// Close ends the payload (the version and the checksum), sends the options and reads the
// node's answer.
func (s *streamedValue) Close() error {
	if s.err != nil {
		return s.err
	}
	if s.left != 0 {
		return fmt.Errorf("%w: the value is %d bytes shorter than its check measured", ErrCorrupt, s.left)
	}
	trailer := binary.LittleEndian.AppendUint16(nil, s.version)
	trailer = binary.LittleEndian.AppendUint64(trailer, crc64Jones(s.crc, trailer))
	trailer = append(trailer, "\r\n"...)
	if _, err := s.c.w.Write(trailer); err != nil {
		return s.c.refused(err)
	}
	for _, a := range s.options {
		fmt.Fprintf(s.c.w, "$%d\r\n%s\r\n", len(a), a)
	}
	return s.c.answer()
}
