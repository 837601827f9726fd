package backup

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// StreamRDB reads a snapshot of the node at addr as a replica would get it and writes the RDB
// to w, returning its size. It authenticates as user (the replication user: SYNC is among its
// commands), announces that it takes a diskless transfer (REPLCONF capa eof: the node streams
// the snapshot from memory instead of writing a file first) and that it wants the snapshot only
// (REPLCONF rdb-only 1: no replication stream after it, the node closes), then sends SYNC.
//
// A stream cut short, or one whose end marker does not arrive, is an error: w may then hold a
// prefix, which the caller must not keep.
func StreamRDB(ctx context.Context, addr, user, password string, w io.Writer) (n int64, err error) {
	return streamRDBFrom(ctx, nil, nil, addr, user, password, w)
}

// dialNode connects to a node, from local (nil: the system's choice), over TLS when cfg is set.
func dialNode(ctx context.Context, local net.Addr, cfg *tls.Config, addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{LocalAddr: local, Timeout: timeout}
	if cfg != nil {
		td := tls.Dialer{NetDialer: &d, Config: cfg}
		return td.DialContext(ctx, "tcp", addr)
	}
	return d.DialContext(ctx, "tcp", addr)
}

// streamRDBFrom is StreamRDB with the connection's local address (nil: the system's choice)
// and TLS configuration (nil: plain).
func streamRDBFrom(ctx context.Context, local net.Addr, cfg *tls.Config, addr, user, password string, w io.Writer) (n int64, err error) {
	conn, err := dialNode(ctx, local, cfg, addr, 0)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	idle := &idleConn{Conn: conn, ctx: ctx, idle: streamIdle}
	stop := context.AfterFunc(ctx, idle.abort)
	defer stop()
	defer func() {
		// Cancellation arrives as a deadline on the connection: say it was the context.
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", context.Cause(ctx), err)
		}
	}()
	r := bufio.NewReaderSize(idle, 1<<20)
	if err := requestSnapshot(conn, r, user, password); err != nil {
		return 0, err
	}
	// The node may send newlines while it prepares the snapshot, to keep the link alive.
	var header string
	for header == "" {
		if header, err = readLine(r); err != nil {
			return 0, fmt.Errorf("SYNC: %w", err)
		}
	}
	return readPayload(r, header, w)
}

// requestSnapshot asks the node on conn for a snapshot as a replica would: it authenticates as
// user, announces its version, that it takes a diskless transfer and the snapshot only, then
// sends SYNC. The node's answers come on r.
func requestSnapshot(conn net.Conn, r *bufio.Reader, user, password string) error {
	for _, cmd := range [][]string{{"AUTH", user, password}, {"REPLCONF", "version", announcedVersion}, {"REPLCONF", "capa", "eof"}, {"REPLCONF", "rdb-only", "1"}} {
		if err := send(conn, cmd...); err != nil {
			return err
		}
		line, err := readLine(r)
		if err != nil {
			return fmt.Errorf("%s: %w", cmd[0], err)
		}
		if !strings.HasPrefix(line, "+") {
			return fmt.Errorf("%s %s: %s", cmd[0], strings.Join(cmd[1:min(2, len(cmd))], " "), strings.TrimPrefix(line, "-"))
		}
	}
	return send(conn, "SYNC")
}

// announcedVersion is the Valkey version the snapshot reader says it is (REPLCONF version): the
// newest whose RDB format the operator reads (rdbCheck, readRDBKeys). A Valkey 9 primary writes
// the old format (RDB 11) for a replica that does not say, and that format cannot hold some of
// 9's data: a hash with field expiries failed the whole snapshot ("Can't store key (db 0) in RDB
// version 11", found on 9.1). Older servers take the announcement and ignore it.
const announcedVersion = "9.1.2"

// streamIdle bounds how long a snapshot stream may go without a byte: the node sends newlines
// every second while it prepares one, and a diskless transfer has no pause.
const streamIdle = 2 * time.Minute

// idleConn gives every read and write a deadline idle ahead, unless the context ended: abort
// then sets a deadline in the past, and the lock keeps a read or write from moving it forward
// again.
type idleConn struct {
	net.Conn
	ctx  context.Context
	idle time.Duration
	mu   sync.Mutex
}

func (c *idleConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if err := c.ctx.Err(); err != nil {
		c.mu.Unlock()
		return 0, err
	}
	_ = c.SetReadDeadline(time.Now().Add(c.idle))
	c.mu.Unlock()
	return c.Conn.Read(p)
}

func (c *idleConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if err := c.ctx.Err(); err != nil {
		c.mu.Unlock()
		return 0, err
	}
	_ = c.SetWriteDeadline(time.Now().Add(c.idle))
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *idleConn) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.SetDeadline(time.Unix(1, 0))
}

// readPayload copies the snapshot that follows header: "$<length>" (a file written first) or
// "$EOF:<40-byte mark>" (diskless: the payload ends with the mark).
func readPayload(r *bufio.Reader, header string, w io.Writer) (int64, error) {
	switch {
	case strings.HasPrefix(header, "-"):
		return 0, fmt.Errorf("SYNC: %s", header[1:])
	case strings.HasPrefix(header, "$EOF:"):
		mark := []byte(header[len("$EOF:"):])
		if len(mark) != 40 {
			return 0, fmt.Errorf("SYNC: end mark of %d bytes", len(mark))
		}
		return copyUntilMark(r, mark, w)
	case strings.HasPrefix(header, "$"):
		size, err := strconv.ParseInt(header[1:], 10, 64)
		if err != nil || size < 0 {
			return 0, fmt.Errorf("SYNC: bad length %q", header)
		}
		n, err := io.CopyN(w, r, size)
		if err == io.EOF {
			err = fmt.Errorf("SYNC: the node closed the stream after %d of %d bytes", n, size)
		}
		return n, err
	}
	return 0, fmt.Errorf("SYNC: unexpected reply %q", header)
}

// copyUntilMark copies r to w until the mark, which it does not copy. The last len(mark) bytes
// read are held back until more arrive, so that the mark never reaches w.
func copyUntilMark(r io.Reader, mark []byte, w io.Writer) (int64, error) {
	buf := make([]byte, 1<<20)
	held := make([]byte, 0, len(mark))
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			data := append(held, buf[:k]...)
			if bytes.HasSuffix(data, mark) {
				out := data[:len(data)-len(mark)]
				m, werr := w.Write(out)
				return n + int64(m), werr
			}
			keep := min(len(mark), len(data))
			out := data[:len(data)-keep]
			m, werr := w.Write(out)
			n += int64(m)
			if werr != nil {
				return n, werr
			}
			held = append(held[:0], data[len(data)-keep:]...)
		}
		if err == io.EOF {
			return n, fmt.Errorf("SYNC: the node closed the stream after %d bytes, before the end mark", n)
		}
		if err != nil {
			return n, err
		}
	}
}

func send(w io.Writer, args ...string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// readLine reads one line of the protocol without its line end, at most r's buffer long (a
// node's status and length lines are short; a peer's endless line must not grow memory).
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return "", fmt.Errorf("a line longer than %d bytes", r.Size())
	case errors.Is(err, io.EOF):
		return "", errors.New("the connection closed")
	case err != nil:
		return "", err
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}
