package backup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// LoadByRestore replaces the data of the cluster-mode primary at target with the snapshot stored
// under name, the cluster-mode counterpart of Load (Valkey refuses REPLICAOF in cluster mode).
// The node ends as Load leaves one: a primary holding exactly the snapshot (and its function
// libraries) under a replication history of its own, its replicas cut off, client writes still
// fenced. It returns the node's replication ID after the load.
//
// The steps: the snapshot is verified (nothing is touched when it is missing, truncated or
// corrupt); the node's replication user is turned off and its replicas' links closed (the sync
// fence; the machine fenced the node already, this makes the load safe on its own); its
// replication backlog is freed, which gives it a new replication ID, so that no node of the old
// history can resume from it (a node without one creates one, which gives it a new ID too:
// newHistoryBeforeTheLoad); it is emptied (FLUSHALL, FUNCTION FLUSH); the snapshot, pinned to
// the object verified, is streamed from the store and replayed key by key with RESTORE
// (readRDBKeys: each key's value exactly as the file holds it, its expiry and eviction hints),
// pipelined, except that a value of streamThreshold bytes or more is sent as it is read, never
// held whole (restoreConn); every key must hash to one of slots (the shard's in the backup's
// manifest); last a backlog is created by a snapshot request of the operator's own (SYNC,
// closed at once): Valkey takes yet another ID when a backlog is created, so the ID returned is
// the one the node's replicas will sync under. A load cut short leaves the node fenced with part of the data; it is
// retried from the start (FLUSHALL again).
//
// The operator's user needs, for this load only, FLUSHALL, RESTORE, FUNCTION FLUSH and LOAD, and
// SYNC and REPLCONF; the caller grants them.
func LoadByRestore(ctx context.Context, target Target, store Store, name string, rec Result, slots []machine.SlotRange) (string, error) {
	if len(slots) == 0 {
		return "", fmt.Errorf("%w: %s: the backup's manifest names no slots for this shard", ErrCorrupt, store.Location(name))
	}
	etag, large, err := validate(ctx, store, name, rec, true, slots)
	if err != nil {
		return "", err
	}
	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{target.Addr}, Username: target.User, Password: target.Password, DisableCache: true, ForceSingleClient: true, DisableRetry: true, TLSConfig: target.TLS})
	if err != nil {
		return "", err
	}
	defer c.Close()
	info, err := infoOf(ctx, c)
	if err != nil {
		return "", err
	}
	if info["role"] != "master" {
		return "", fmt.Errorf("%s is a %s: a snapshot is loaded into a primary serving the shard's slots", target.Addr, info["role"])
	}
	fence := c.B().AclSetuser().Username(target.MasterUser).Rule("off").Build()
	kill := c.B().ClientKill().User(target.MasterUser).Build()
	if err := c.Do(ctx, fence).Error(); err != nil {
		return "", fmt.Errorf("fencing replication: %w", err)
	}
	if err := c.Do(ctx, kill).Error(); err != nil && !strings.Contains(err.Error(), "No such client") {
		return "", fmt.Errorf("closing the replicas' links: %w", err)
	}
	// The new history comes before any other change: a node still under its old one must be
	// the node it was (a refused restore gives it back as it is, min-replicas-to-write
	// included, were the operator to die in between).
	if err := newHistoryBeforeTheLoad(ctx, c, target); err != nil {
		return "", err
	}
	// A Durable node refuses writes without a replica (min-replicas-to-write), and the load has
	// just cut its replicas off: the check is off for the load and put back after it.
	restoreMinReplicas, err := setForTheLoad(ctx, c, "min-replicas-to-write", "0", target.MinReplicasToWrite)
	if err != nil {
		return "", err
	}
	defer restoreMinReplicas()
	for _, cmd := range []vk.Completed{c.B().Flushall().Sync().Build(), c.B().FunctionFlush().Sync().Build()} {
		if err := c.Do(ctx, cmd).Error(); err != nil {
			return "", fmt.Errorf("emptying the node: %w", err)
		}
	}
	keys, err := replay(ctx, c, target, store, name, rec, etag, slots, large)
	if err != nil {
		return "", fmt.Errorf("loading %s (%d key(s) in): %w", store.Location(name), keys, err)
	}
	return newBacklog(ctx, c, target)
}

// replay streams the snapshot (pinned to etag) into the node key by key and returns how many
// keys it restored. Small values are pipelined through c; a value of at least streamThreshold
// bytes (large: their lengths, as the check measured them) goes out as it is read, on a
// connection of its own to target (restoreConn), once the commands before it were answered:
// the keys are restored in the file's order, and a refusal names its key.
func replay(ctx context.Context, c vk.Client, target Target, store Store, name string, rec Result, etag string, slots []machine.SlotRange, large largeValues) (int, error) {
	var batch vk.Commands
	var what []string // what each command of the batch restores, for its refusal
	size, keys := 0, 0
	send := func() error {
		for i, r := range c.DoMulti(ctx, batch...) {
			if err := r.Error(); err != nil {
				return fmt.Errorf("%s: %w", what[i], err)
			}
		}
		keys += len(batch)
		batch, what, size = batch[:0], what[:0], 0
		return nil
	}
	add := func(cmd vk.Completed, name string, bytes int) error {
		batch, what = append(batch, cmd), append(what, name)
		if size += bytes; len(batch) >= replayBatch || size >= replayBatchBytes {
			return send()
		}
		return nil
	}
	var conn *restoreConn
	defer func() {
		if conn != nil {
			conn.close()
		}
	}()
	err := streamKeys(ctx, store, name, rec, etag, rdbVisitor{
		cluster: true,
		keyName: inSlots(slots),
		key: func(k rdbKey) error {
			return add(c.B().Arbitrary("RESTORE").Args(k.restoreArgs()...).Build(), fmt.Sprintf("RESTORE %q", k.Key), len(k.Value))
		},
		stream: func(k rdbKey, at int64) (io.WriteCloser, error) {
			n, ok := large[at]
			if !ok {
				return nil, nil
			}
			if err := send(); err != nil {
				return nil, err
			}
			if conn == nil {
				var err error
				if conn, err = dialRestore(ctx, target); err != nil {
					return nil, err
				}
			}
			return &countedRestore{v: conn.restore(k, n), key: k.Key, keys: &keys}, nil
		},
		function: func(code []byte) error {
			return add(c.B().FunctionLoad().Replace().FunctionCode(string(code)).Build(), "FUNCTION LOAD", len(code))
		},
	}, send)
	return keys, err
}

// countedRestore is a streamed RESTORE that names its key when the node refuses it and counts
// it when the node took it.
type countedRestore struct {
	v    *streamedValue
	key  []byte
	keys *int
}

func (r *countedRestore) Write(p []byte) (int, error) {
	n, err := r.v.Write(p)
	if err != nil {
		// The reader names the key.
		err = fmt.Errorf("sending it to the node: %w", err)
	}
	return n, err
}

func (r *countedRestore) Close() error {
	if err := r.v.Close(); err != nil {
		return fmt.Errorf("RESTORE %q: %w", r.key, err)
	}
	*r.keys++
	return nil
}

// streamKeys streams the object name (pinned to etag, "" for any) from the store through
// readRDBKeys into v, then calls last; it returns once the fetch has checked the object's size
// and sha256 too.
func streamKeys(ctx context.Context, store Store, name string, rec Result, etag string, v rdbVisitor, last func() error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	fetched := make(chan error, 1)
	go func() {
		_, err := fetch(ctx, store, name, rec, etag, pw)
		pw.CloseWithError(err)
		fetched <- err
	}()
	_, err := readRDBKeys(ctx, pr, rec.Size, v)
	if err == nil && last != nil {
		err = last()
	}
	if err != nil {
		cancel()
		_ = pr.CloseWithError(err)
		if ferr := <-fetched; ferr != nil && !errors.Is(ferr, err) {
			return errors.Join(err, ferr)
		}
		return err
	}
	// The file's checksum follows its last key: read it, so that the fetch ends and says whether
	// the object still matches its size and sha256.
	if _, err := io.Copy(io.Discard, pr); err != nil {
		return err
	}
	return <-fetched
}

const (
	// replayBatch and replayBatchBytes bound a pipeline of RESTOREs (measured: larger batches
	// gain nothing on loopback).
	replayBatch      = 512
	replayBatchBytes = 4 << 20
	// backlogTimeout bounds the waits for Valkey's once-a-second replication cron.
	backlogTimeout = 10 * time.Second
	// defaultBacklogTTL is Valkey's repl-backlog-ttl, which the operator does not change.
	defaultBacklogTTL = "3600"
)

// newHistoryBeforeTheLoad gives the node a replication ID that no other node shares before its
// data is touched: its backlog is freed (freeBacklog), or, without one, one is created (Valkey
// takes a new ID then). The machine relies on it: a node that still answers under the
// history recorded before a restore holds the data it had, so a restore refused after this
// node was emptied must not find it under its old ID (it would give the cluster back empty).
func newHistoryBeforeTheLoad(ctx context.Context, c vk.Client, target Target) error {
	info, err := infoOf(ctx, c)
	if err != nil {
		return err
	}
	if info["repl_backlog_active"] == "0" {
		_, err := newBacklog(ctx, c, target)
		return err
	}
	return freeBacklog(ctx, c)
}

// freeBacklog frees the node's replication backlog, which Valkey does only on its own, with a
// new replication ID, once no replica has been attached for repl-backlog-ttl seconds: the TTL is
// set to one second for the wait and put back. A node without a backlog has nothing to do.
func freeBacklog(ctx context.Context, c vk.Client) error {
	info, err := infoOf(ctx, c)
	if err != nil || info["repl_backlog_active"] == "0" {
		return err
	}
	// Put back to Valkey's default if an interrupted load left its one second behind.
	restore, err := setForTheLoad(ctx, c, "repl-backlog-ttl", "1", "")
	if err != nil {
		return err
	}
	defer restore()
	return waitInfo(ctx, c, "the replication backlog to be freed", func(info map[string]string) bool {
		return info["repl_backlog_active"] == "0"
	})
}

// setForTheLoad sets a configuration parameter for the length of the load and returns what
// puts it back (also when the caller's context has ended): to after when given, else to the
// value it had. A load the operator's death interrupted leaves its own value behind, which a
// later load would take for the node's: after, and putting back a backlog TTL of one second as
// Valkey's default, keep that from lasting.
func setForTheLoad(ctx context.Context, c vk.Client, param, value, after string) (func(), error) {
	got, err := c.Do(ctx, c.B().ConfigGet().Parameter(param).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("CONFIG GET %s: %w", param, err)
	}
	old, ok := got[param]
	if !ok {
		return nil, fmt.Errorf("CONFIG GET %s: no value", param)
	}
	switch {
	case after != "":
		old = after
	case old == value && param == "repl-backlog-ttl":
		old = defaultBacklogTTL
	}
	set := func(ctx context.Context, v string) error {
		return c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue(param, v).Build()).Error()
	}
	if err := set(ctx, value); err != nil {
		return nil, fmt.Errorf("CONFIG SET %s: %w", param, err)
	}
	return func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = set(rctx, old)
	}, nil
}

// newBacklog makes the node create a replication backlog, under the new replication ID Valkey
// gives it then, by asking for a snapshot as a replica would (requestSnapshot, as the operator's
// user; the request is dropped as soon as the backlog exists), and returns that ID.
func newBacklog(ctx context.Context, c vk.Client, target Target) (string, error) {
	conn, err := dialNode(ctx, nil, target.TLS, target.Addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(backlogTimeout))
	r := bufio.NewReader(conn)
	if err := requestSnapshot(conn, r, target.User, target.Password); err != nil {
		return "", err
	}
	var id string
	err = waitInfo(ctx, c, "the replication backlog to be created", func(info map[string]string) bool {
		id = info["master_replid"]
		return info["repl_backlog_active"] == "1"
	})
	return id, err
}

// waitInfo polls INFO replication until done says so, within backlogTimeout.
func waitInfo(ctx context.Context, c vk.Client, what string, done func(map[string]string) bool) error {
	ctx, cancel := context.WithTimeout(ctx, backlogTimeout)
	defer cancel()
	for {
		info, err := infoOf(ctx, c)
		if err == nil && done(info) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, errors.Join(ctx.Err(), err))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// infoOf is INFO of sections (replication when none is named) as a map.
func infoOf(ctx context.Context, c vk.Client, sections ...string) (map[string]string, error) {
	if len(sections) == 0 {
		sections = []string{"replication"}
	}
	text, err := c.Do(ctx, c.B().Info().Section(sections...).Build()).ToString()
	if err != nil {
		return nil, fmt.Errorf("INFO %s: %w", strings.Join(sections, " "), err)
	}
	info := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			info[k] = v
		}
	}
	return info, nil
}

// keySlot is the hash slot of a key (CRC16/XMODEM of the key, or of its hash tag: the part
// between the first { and the next } when that is not empty).
func keySlot(key []byte) int {
	if i := strings.IndexByte(string(key), '{'); i >= 0 {
		if j := strings.IndexByte(string(key[i+1:]), '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for _, b := range key {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % machine.NumSlots
}

// inSlots refuses a key that does not hash to one of slots.
func inSlots(slots []machine.SlotRange) func([]byte) error {
	return func(key []byte) error {
		if slot := keySlot(key); !inRanges(slot, slots) {
			return fmt.Errorf("%w: key %q hashes to slot %d, which the shard did not serve in the backup", ErrCorrupt, key, slot)
		}
		return nil
	}
}

// inRanges reports whether slot is in one of ranges.
func inRanges(slot int, ranges []machine.SlotRange) bool {
	for _, r := range ranges {
		if slot >= r.Start && slot <= r.End {
			return true
		}
	}
	return false
}
