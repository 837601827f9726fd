package backup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	vk "github.com/valkey-io/valkey-go"
)

// Target is a node a snapshot is loaded into, reached as the operator user (REPLICAOF is among
// its commands).
type Target struct {
	Addr, User, Password string
}

// Load replaces the data of the node at target with the snapshot stored under name, through
// Valkey's own replication: the snapshot is verified first (Verify: nothing is touched when it is
// missing, truncated or corrupt), then the caller's process poses as a primary on listenIP (an
// address the node can reach: the operator pod's), the node is pointed at it (REPLICAOF), takes
// the snapshot as a full sync streamed from the store (nothing stored on the way; the node itself
// writes it to its own disk before loading, as any replica does), and is detached again
// (REPLICAOF NO ONE): a primary holding exactly the snapshot, under a new replication ID.
//
// Cluster mode refuses REPLICAOF: a cluster node is loaded at start-up instead (not here).
func Load(ctx context.Context, target Target, listenIP string, store Store, name string, rec Result) error {
	if err := Verify(ctx, store, name, rec); err != nil {
		return err
	}
	if rec.Size <= 0 {
		return fmt.Errorf("%s: the backup's record has no size", store.Location(name))
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(listenIP, "0"))
	if err != nil {
		return err
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serveFullSync(ctx, ln, store, name, rec) }()

	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{target.Addr}, Username: target.User, Password: target.Password, DisableCache: true, ForceSingleClient: true, DisableRetry: true})
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Do(ctx, c.B().Replicaof().Host(listenIP).Port(int64(port)).Build()).Error(); err != nil {
		return fmt.Errorf("REPLICAOF %s %d: %w", listenIP, port, err)
	}
	// Whatever happens next, the node must not stay pointed at an address that goes away.
	detach := func() error {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		return c.Do(dctx, c.B().Replicaof().No().One().Build()).Error()
	}
	for {
		select {
		case err := <-served:
			_ = detach()
			if err == nil {
				err = errors.New("the node closed the replication link before it loaded the snapshot")
			}
			return fmt.Errorf("loading %s: %w", store.Location(name), err)
		case <-ctx.Done():
			_ = detach()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		text, err := c.Do(ctx, c.B().Info().Section("replication").Section("persistence").Build()).ToString()
		if err != nil {
			continue
		}
		info := map[string]string{}
		for _, line := range strings.Split(text, "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				info[k] = v
			}
		}
		if info["master_link_status"] == "up" && info["master_sync_in_progress"] == "0" && info["loading"] == "0" {
			return detach()
		}
	}
}

// serveFullSync answers one replica as a primary does: the handshake (PING, AUTH, REPLCONF: all
// accepted), then PSYNC with a full sync whose payload is the snapshot streamed from the store,
// then nothing (the replica's acknowledgements are read and dropped) until ctx ends.
func serveFullSync(ctx context.Context, ln net.Listener, store Store, name string, rec Result) error {
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	conn, err := ln.Accept()
	if err != nil {
		return err
	}
	defer conn.Close()
	context.AfterFunc(ctx, func() { _ = conn.Close() })
	r := bufio.NewReader(conn)
	for {
		args, err := readCommand(r)
		if err != nil {
			return fmt.Errorf("the replica's handshake: %w", err)
		}
		switch strings.ToUpper(args[0]) {
		case "PING":
			_, err = io.WriteString(conn, "+PONG\r\n")
		case "PSYNC", "SYNC":
			if _, err := fmt.Fprintf(conn, "+FULLRESYNC %s 0\r\n$%d\r\n", restoreReplID, rec.Size); err != nil {
				return err
			}
			w := bufio.NewWriterSize(conn, 1<<20)
			if err := Fetch(ctx, store, name, rec, w); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
			// The replica now loads, then acknowledges now and then: drain until the caller
			// detaches it (the connection closes) or gives up.
			_, err = io.Copy(io.Discard, r)
			return err
		default:
			_, err = io.WriteString(conn, "+OK\r\n")
		}
		if err != nil {
			return err
		}
	}
}

// restoreReplID is the replication ID the loaded node first takes; REPLICAOF NO ONE then gives it
// a new one of its own.
var restoreReplID = strings.Repeat("0", 33) + "restore"

// readCommand reads one command in the protocol's array form.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return strings.Fields(line), nil // an inline command
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n <= 0 || n > 64 {
		return nil, fmt.Errorf("bad command header %q", line)
	}
	args := make([]string, n)
	for i := range args {
		h, err := readLine(r)
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimPrefix(h, "$"))
		if err != nil || size < 0 || size > 1<<20 {
			return nil, fmt.Errorf("bad argument header %q", h)
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}
