package backup

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	vk "github.com/valkey-io/valkey-go"
)

// Target is a node a snapshot is loaded into, reached as the operator user (REPLICAOF and CONFIG
// SET are among its commands), and the replication credentials it uses with its real primaries,
// put back after the load.
type Target struct {
	Addr, User, Password       string
	MasterUser, MasterPassword string
	// MinReplicasToWrite is the node's min-replicas-to-write as the operator runs it, put back
	// after a cluster-mode load turned it off ("": the value the node had).
	MinReplicasToWrite string
	// TLS, when set, is how the node is reached (Addr is then its TLS port).
	TLS *tls.Config
}

// Load replaces the data of the node at target with the snapshot stored under name, through
// Valkey's own replication: the snapshot is verified first (validate: nothing is touched when it
// is missing, truncated, corrupt or not a file a node can load), then the caller's process poses as a primary on listenIP (an
// address the node can reach: the operator pod's), the node is pointed at it (REPLICAOF), takes
// the snapshot as a full sync streamed from the store (nothing stored on the way; the node itself
// writes it to its own disk before loading, as any replica does), and is detached again
// (REPLICAOF NO ONE): a primary holding exactly the snapshot, under a new replication ID.
//
// The snapshot served is the object the verification read (pinned by its ETag), to the target's
// address only, and its last bytes are sent only once the stream passed the checks. A node that
// does not connect within connectTimeout, a failed transfer, or the caller giving up ends it;
// the node is always detached again (REPLICAOF NO ONE, retried while it loads).
//
// Cluster mode refuses REPLICAOF: a cluster node is loaded at start-up instead (not here).
func Load(ctx context.Context, target Target, listenIP string, store Store, name string, rec Result) error {
	// The object served is the one validated (pinned by its ETag): a node is never handed a
	// file it could not load.
	etag, _, err := validate(ctx, store, name, rec, false, nil)
	if err != nil {
		return err
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
	connected := make(chan struct{})
	fs := fullSync{token: randomHex(20), store: store, name: name, rec: rec, etag: etag, replID: randomHex(20), connected: connected}
	go func() { served <- fs.serve(ctx, ln) }()

	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{target.Addr}, Username: target.User, Password: target.Password, DisableCache: true, ForceSingleClient: true, DisableRetry: true, TLSConfig: target.TLS})
	if err != nil {
		return err
	}
	defer c.Close()
	if target.TLS != nil {
		// The listener below serves plain TCP: the node's next replication link must not use
		// TLS (the operator's next REPLICAOF sets it back for the node's primary).
		if err := c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("tls-replication", "no").Build()).Error(); err != nil {
			return fmt.Errorf("CONFIG SET tls-replication no: %w", err)
		}
	}
	// The node authenticates to the listener with a one-time password: the snapshot goes to it
	// only (addresses prove nothing: a sidecar or the loopback may stand between).
	setAuth := func(ctx context.Context, user, password string) error {
		return c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("masteruser", user).ParameterValue("masterauth", password).Build()).Error()
	}
	if err := setAuth(ctx, loadUser, fs.token); err != nil {
		return fmt.Errorf("CONFIG SET masterauth: %w", err)
	}
	if err := c.Do(ctx, c.B().Replicaof().Host(listenIP).Port(int64(port)).Build()).Error(); err != nil {
		return errors.Join(fmt.Errorf("REPLICAOF %s %d: %w", listenIP, port, err), setAuth(context.Background(), target.MasterUser, target.MasterPassword))
	}
	// Whatever happens next, the node must not stay pointed at an address that goes away (it
	// would refuse writes and retry for ever). A node loading a full sync refuses REPLICAOF
	// (-LOADING): the detach is tried again until it is taken, within detachTimeout.
	detach := func() error {
		dctx, dcancel := context.WithTimeout(context.Background(), detachTimeout)
		defer dcancel()
		for {
			err := c.Do(dctx, c.B().Replicaof().No().One().Build()).Error()
			if err == nil {
				return setAuth(dctx, target.MasterUser, target.MasterPassword)
			}
			select {
			case <-dctx.Done():
				return fmt.Errorf("REPLICAOF NO ONE on %s: %w; the node may still follow %s:%d", target.Addr, err, listenIP, port)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	noConnection := time.After(connectTimeout)
	for {
		select {
		case err := <-served:
			if err == nil {
				err = errors.New("the node closed the replication link before it loaded the snapshot")
			}
			return errors.Join(fmt.Errorf("loading %s: %w", store.Location(name), err), detach())
		case <-ctx.Done():
			return errors.Join(ctx.Err(), detach())
		case <-noConnection:
			select {
			case <-connected:
			default:
				return errors.Join(fmt.Errorf("%s did not connect to %s:%d within %v to take the snapshot (can it reach the operator?)", target.Addr, listenIP, port, connectTimeout), detach())
			}
		case <-time.After(50 * time.Millisecond):
		}
		info, err := infoOf(ctx, c, "replication", "persistence")
		if err != nil {
			continue
		}
		if info["master_link_status"] == "up" && info["master_sync_in_progress"] == "0" && info["loading"] == "0" {
			return detach()
		}
	}
}

const (
	// connectTimeout bounds the wait for the node to connect for the snapshot.
	connectTimeout = 30 * time.Second
	// detachTimeout bounds the retries of REPLICAOF NO ONE (a node refuses it while it loads).
	detachTimeout = 2 * time.Minute
)

// loadUser is the user name the node authenticates to the listener with.
const loadUser = "restore"

// fullSync answers the target node as a primary does, once.
type fullSync struct {
	token     string // the one-time password the target authenticates with
	store     Store
	name      string
	rec       Result
	etag      string // the object Verify checked: a replaced object is not served
	replID    string
	connected chan struct{}
}

// send streams the full sync to the authenticated replica.
func (f fullSync) send(ctx context.Context, conn net.Conn, r io.Reader) error {
	if _, err := fmt.Fprintf(conn, "+FULLRESYNC %s 0\r\n$%d\r\n", f.replID, f.rec.Size); err != nil {
		return err
	}
	w := bufio.NewWriterSize(conn, 1<<20)
	held := &holdBack{w: w, n: 8}
	if _, err := fetch(ctx, f.store, f.name, f.rec, f.etag, held); err != nil {
		return err
	}
	if err := held.release(); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// The replica now loads, then acknowledges now and then: drain until the caller detaches it
	// (the connection closes) or gives up.
	_, err := io.Copy(io.Discard, r)
	return err
}

// holdBack writes everything to w but the last n bytes, until release.
type holdBack struct {
	w    io.Writer
	n    int
	held []byte
}

func (h *holdBack) Write(p []byte) (int, error) {
	data := append(h.held, p...)
	if len(data) <= h.n {
		h.held = data
		return len(p), nil
	}
	if _, err := h.w.Write(data[:len(data)-h.n]); err != nil {
		return 0, err
	}
	h.held = append([]byte(nil), data[len(data)-h.n:]...)
	return len(p), nil
}

func (h *holdBack) release() error {
	_, err := h.w.Write(h.held)
	return err
}

// randomHex is n random bytes in hex: the one-time password, and the replication ID of the
// node's first moments after a load (REPLICAOF NO ONE then gives it one of its own), random so
// that no two loaded nodes ever share a history they could continue each other's data from.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
