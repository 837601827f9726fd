package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// Conn is one RESP2 connection.
type Conn struct {
	c net.Conn
	r *bufio.Reader
	// Made is when the TCP connection was established.
	Made time.Time
}

// Error is an error reply of the server (-ERR …, -READONLY …), as opposed to a failure of
// the connection.
type Error string

func (e Error) Error() string { return string(e) }

// IsReplyError tells a server's error reply from a broken connection.
func IsReplyError(err error) bool {
	var re Error
	return errors.As(err, &re)
}

// Dial connects to addr (an IPv4 loopback address) from the address from (when valid) and,
// when pass is set, authenticates: AUTH user pass, or AUTH pass when user is empty.
func Dial(addr string, from netip.Addr, user, pass string, timeout time.Duration) (*Conn, error) {
	if ap, err := netip.ParseAddrPort(addr); err != nil || !ap.Addr().Is4() || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("refusing to dial %q: tests dial only 127.0.0.0/8", addr)
	}
	d := net.Dialer{Timeout: timeout}
	if from.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: from.AsSlice()}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	rc := &Conn{c: c, r: bufio.NewReader(c), Made: time.Now()}
	if pass != "" {
		args := []string{"AUTH", pass}
		if user != "" {
			args = []string{"AUTH", user, pass}
		}
		if _, err := rc.Do(timeout, args...); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	return rc, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Do sends one command and reads its reply within timeout: a string, an int64, nil or a []any
// (error replies inside an array stay in place as Error values); an error reply is returned
// as an Error.
func (c *Conn) Do(timeout time.Duration, args ...string) (any, error) {
	out, err := c.Pipeline(timeout, [][]string{args})
	if err != nil {
		return nil, err
	}
	if e, ok := out[0].(Error); ok {
		return nil, e
	}
	return out[0], nil
}

// Pipeline sends the commands at once and reads their replies within timeout; error replies
// are returned in place, as Error values.
func (c *Conn) Pipeline(timeout time.Duration, cmds [][]string) ([]any, error) {
	if err := c.c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	var b []byte
	for _, cmd := range cmds {
		b = append(b, encode(cmd)...)
	}
	if _, err := c.c.Write(b); err != nil {
		return nil, err
	}
	out := make([]any, 0, len(cmds))
	for range cmds {
		v, err := readReply(c.r)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Send writes one command within timeout without reading anything (for a test that plays a
// replica and reads the stream itself).
func (c *Conn) Send(timeout time.Duration, args ...string) error {
	if err := c.c.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	_, err := c.c.Write(encode(args))
	return err
}

// Stream gives the connection's buffered reader, with every read bounded by deadline.
func (c *Conn) Stream(deadline time.Time) *bufio.Reader {
	_ = c.c.SetReadDeadline(deadline)
	return c.r
}

func encode(args []string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

const (
	// maxBulk is the largest bulk string a server sends (Valkey's proto-max-bulk-len).
	maxBulk = 512 << 20
	// maxDepth bounds nested arrays (no reply of Valkey nests more than a few levels).
	maxDepth = 64
)

// readReply reads one RESP2 reply: a string, an int64, nil, a []any or an Error. A length the
// reply claims is never allocated ahead of the bytes that arrive.
func readReply(r *bufio.Reader) (any, error) { return readReplyAt(r, 0) }

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func readReplyAt(r *bufio.Reader, depth int) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("malformed reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return Error(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		if n > maxBulk {
			return nil, fmt.Errorf("a bulk string of %d bytes, more than a server sends (%d)", n, maxBulk)
		}
		// Grown as the bytes arrive: a header alone allocates nothing of what it claims.
		var buf bytes.Buffer
		if _, err := io.CopyN(&buf, r, int64(n)+2); err != nil {
			return nil, noEOF(err)
		}
		return string(buf.Bytes()[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		if depth >= maxDepth {
			return nil, fmt.Errorf("arrays nested deeper than %d", maxDepth)
		}
		items := make([]any, 0, min(n, 1024))
		for i := 0; i < n; i++ {
			v, err := readReplyAt(r, depth+1)
			if err != nil {
				return nil, err
			}
			items = append(items, v)
		}
		return items, nil
	}
	return nil, fmt.Errorf("unknown reply type %q", line[0])
}
