package backup

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The load's listener (Load) is reachable by anything that can reach the operator's pod while a
// snapshot is loaded. Before a connection authenticates with the one-time token it is a
// stranger's, and a stranger gets little: authTimeout to authenticate, lines of at most
// maxLine bytes, at most maxStrangers such connections at a time, each handled on its own so
// that none holds the node's connection back.
const (
	// authTimeout bounds the time from accepting a connection to its AUTH: a replica sends
	// PING and AUTH as soon as it connects.
	authTimeout = 10 * time.Second
	// maxLine bounds a line, and a bulk argument, of the handshake (a replica's longest is
	// REPLCONF's, a few dozen bytes).
	maxLine = 4 << 10
	// maxArgs bounds the arguments of one command.
	maxArgs = 16
	// maxStrangers bounds the connections not authenticated yet; more are closed at once (the
	// node's own connection is retried by the node every second).
	maxStrangers = 16
)

// errArgTooLong is an argument longer than maxLine.
var errArgTooLong = fmt.Errorf("an argument longer than %d bytes", maxLine)

// connectedMu makes marking a fullSync connected (closing its channel) safe when two
// connections present the token at once.
var connectedMu sync.Mutex

// serve accepts connections until one authenticates with the token (any other is refused and
// closed: the snapshot goes to the node it was meant for only), answers its handshake (PING,
// REPLCONF: accepted), then PSYNC with a full sync whose payload is the snapshot streamed from
// the store, pinned to the checked object, its last 8 bytes (the checksum) held back until the
// stream passed the checks: a node that does not get them discards the transfer and keeps its
// data. Then nothing until ctx ends (the replica's acknowledgements are read and dropped).
// Connections are handled at the same time: a stranger that connected first does not delay
// the node's.
func (f fullSync) serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	done := make(chan error, 1)
	strangers := make(chan struct{}, maxStrangers)
	// Every connection is closed, and its handler gone, before serve returns.
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	conns := make(map[net.Conn]struct{})
	closed := false
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		closed = true
		for c := range conns {
			_ = c.Close()
		}
	}()
	accepted := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				accepted <- err
				return
			}
			select {
			case strangers <- struct{}{}:
			default:
				_ = conn.Close() // too many at once
				continue
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				_ = conn.Close()
				continue
			}
			conns[conn] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				ours, err := f.handle(ctx, conn, func() { <-strangers })
				mu.Lock()
				delete(conns, conn)
				mu.Unlock()
				if ours {
					select {
					case done <- err:
					default:
					}
				}
			}()
		}
	}()
	select {
	case err := <-done:
		_ = ln.Close()
		return err
	case err := <-accepted:
		// Closed (ctx ended): the node's connection, if any, ends with it.
		select {
		case derr := <-done:
			return derr
		default:
			return err
		}
	}
}

// handle answers one connection; done says whether it was the target's (err is then the
// outcome), not a stranger's. authed is called once the connection authenticated or ended,
// whichever comes first (it frees the connection's place among the strangers).
func (f fullSync) handle(ctx context.Context, conn net.Conn, authed func()) (done bool, err error) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	var once sync.Once
	leftStrangers := func() { once.Do(authed) }
	defer leftStrangers()
	_ = conn.SetDeadline(time.Now().Add(authTimeout))
	r := bufio.NewReaderSize(conn, maxLine)
	isTarget := false
	for {
		args, err := readCommand(r)
		if err != nil {
			if !isTarget {
				return false, nil // a stranger that went away, timed out or sent too much
			}
			return true, fmt.Errorf("the replica's handshake: %w", err)
		}
		if len(args) == 0 {
			continue // an empty line, as Valkey ignores it
		}
		cmd := strings.ToUpper(args[0])
		switch {
		case cmd == "AUTH" && len(args) == 3 && args[1] == loadUser && args[2] == f.token:
			if !isTarget {
				if !f.markConnected() {
					_, _ = io.WriteString(conn, "-ERR the snapshot is taken by another connection\r\n")
					return false, nil
				}
				isTarget = true
				leftStrangers()
				_ = conn.SetDeadline(time.Time{}) // the node's: loading takes as long as it takes
			}
			_, err = io.WriteString(conn, "+OK\r\n")
		case cmd == "AUTH":
			_, _ = io.WriteString(conn, "-WRONGPASS invalid username-password pair\r\n")
			return false, nil
		case cmd == "PING":
			// A replica pings before it authenticates.
			_, err = io.WriteString(conn, "+PONG\r\n")
		case !isTarget:
			_, _ = io.WriteString(conn, "-NOAUTH Authentication required.\r\n")
			return false, nil
		case cmd == "PSYNC" || cmd == "SYNC":
			return true, f.send(ctx, conn, r)
		default:
			_, err = io.WriteString(conn, "+OK\r\n")
		}
		if err != nil {
			return isTarget, err
		}
	}
}

// markConnected records the node's connection; false when another connection already is.
func (f fullSync) markConnected() bool {
	connectedMu.Lock()
	defer connectedMu.Unlock()
	select {
	case <-f.connected:
		return false
	default:
		close(f.connected)
		return true
	}
}

// readCommand reads one command in the protocol's array form, or an inline one; no line or
// argument may be longer than maxLine.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return strings.Fields(line), nil // an inline command
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n <= 0 || n > maxArgs {
		return nil, fmt.Errorf("bad command header %q", line)
	}
	args := make([]string, n)
	for i := range args {
		h, err := readLine(r)
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimPrefix(h, "$"))
		if err != nil || size < 0 {
			return nil, fmt.Errorf("bad argument header %q", h)
		}
		if size > maxLine {
			return nil, errArgTooLong
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}
