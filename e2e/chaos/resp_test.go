package chaos

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// A minimal RESP2 client over one TCP connection. The writer needs exactly that: WAIT counts
// the replicas that acknowledged the last write *of the connection it runs on*, so SET and
// WAIT must share a connection. valkey-go sends WAIT (a blocking command) on a connection of
// its own, where it confirms nothing.

// respConn is one connection to a Valkey server (possibly through the service proxy).
type respConn struct {
	c net.Conn
	r *bufio.Reader
}

// respError is an error reply of the server, as opposed to a network failure.
type respError string

func (e respError) Error() string { return string(e) }

// isReplyError tells a server's error reply from a broken connection.
func isReplyError(err error) bool {
	var re respError
	return errors.As(err, &re)
}

// dialRESP connects to addr (a loopback address) from the address from (when valid) and
// authenticates: AUTH user pass, or AUTH pass for the default user when user is empty.
func dialRESP(addr string, from netip.Addr, user, pass string, timeout time.Duration) (*respConn, error) {
	if ap, err := netip.ParseAddrPort(addr); err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("refusing to dial %q: only loopback addresses", addr)
	}
	d := net.Dialer{Timeout: timeout}
	if from.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: from.AsSlice()}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	rc := &respConn{c: c, r: bufio.NewReader(c)}
	if pass != "" {
		args := []string{"AUTH", pass}
		if user != "" {
			args = []string{"AUTH", user, pass}
		}
		if _, err := rc.do(timeout, args...); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	return rc, nil
}

func (c *respConn) Close() error { return c.c.Close() }

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

// do sends one command and reads its reply within timeout.
func (c *respConn) do(timeout time.Duration, args ...string) (any, error) {
	out, err := c.pipeline(timeout, [][]string{args})
	if err != nil {
		return nil, err
	}
	if e, ok := out[0].(respError); ok {
		return nil, e
	}
	return out[0], nil
}

// pipeline sends the commands at once and reads their replies within timeout; error replies
// are returned in place, as respError values.
func (c *respConn) pipeline(timeout time.Duration, cmds [][]string) ([]any, error) {
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

// readReply reads one RESP2 reply: a string, an int64, nil, a []any or a respError.
func readReply(r *bufio.Reader) (any, error) {
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
		return respError(body), nil
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
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		items := make([]any, 0, n)
		for i := 0; i < n; i++ {
			v, err := readReply(r)
			if err != nil {
				return nil, err
			}
			items = append(items, v)
		}
		return items, nil
	}
	return nil, fmt.Errorf("unknown reply type %q", line[0])
}
