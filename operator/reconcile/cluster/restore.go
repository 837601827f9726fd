package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// A restore reaches the machine as spec.Restore only once its backup has been checked: the
// manifest exists, was taken in the cluster's mode with as many shards, and every file matches
// its size, sha256 and RDB structure. Until then (and for good when the check fails) the
// request is Pending: a running cluster keeps serving, a new one waits closed to writes. The
// check reads the whole backup, so it runs beside the loop, not in it.
//
// Which nodes hold the restored data is told by replication IDs (status.restore.histories):
// the loaded node's, and every ID a node takes while following it or after a promotion among
// them. Valkey keeps a node's ID in its data files, so a node that restarts from its volume is
// still recognised, and so is every node after an operator restart.

// restoreCheck is one backup's verification for one cluster.
type restoreCheck struct {
	id string
	// gen is the cluster's generation the source was resolved at.
	gen   int64
	spec  v1beta1.BackupStore
	store backup.Store
	path  string
	done  bool
	// at is when the check ended: a refusal is checked again after refusedRecheck (a store
	// that was briefly unreachable must not refuse a restore for good).
	at  time.Time
	m   backup.Manifest
	err error
}

// refusedRecheck is how long a refused backup stays refused before it is checked again.
const refusedRecheck = 30 * time.Second

// recheck says whether a refused check is to run again: a backup refused for what it holds
// (backup.Refused: a file of another size or sha256 than its manifest says, one a node could
// not load, a backup of another mode or shard count) once the cluster's spec changes, as the
// same object would be refused again (reading it all again every refusedRecheck would only
// load the store); any other refusal (a store that did not answer, missing credentials) after
// refusedRecheck.
func (ch *restoreCheck) recheck(gen int64, now time.Time) bool {
	if backup.Refused(ch.err) {
		return gen != ch.gen
	}
	return now.Sub(ch.at) > refusedRecheck
}

// restoreChecks remembers each cluster's latest verification (in memory: an operator restart
// verifies again, which only delays a restore not started yet). Every change happens under
// the lock, in one call, so that a check's result is never overwritten by a copy read before it.
type restoreChecks struct {
	mu sync.Mutex
	m  map[types.UID]*restoreCheck
}

func (c *restoreChecks) get(cluster types.UID) *restoreCheck {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.m[cluster]; ch != nil {
		cp := *ch
		return &cp
	}
	return nil
}

// want returns the check of id for cluster as it stands (gen updated), and whether a check must
// start now: there is none of id, or its refusal is older than refusedRecheck.
func (c *restoreChecks) want(cluster types.UID, fresh restoreCheck, now time.Time) (restoreCheck, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[types.UID]*restoreCheck{}
	}
	ch := c.m[cluster]
	staleRefusal := ch != nil && ch.done && ch.err != nil && ch.recheck(fresh.gen, now)
	if ch != nil && ch.id == fresh.id && !staleRefusal {
		ch.gen = fresh.gen
		return *ch, false
	}
	c.m[cluster] = &fresh
	return fresh, true
}

// finish records a check's outcome unless another check of the cluster replaced it meanwhile.
func (c *restoreChecks) finish(cluster types.UID, done restoreCheck) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.m[cluster]
	if ch == nil || ch.id != done.id || ch.done {
		return false
	}
	ch.done, ch.at, ch.m, ch.err = true, done.at, done.m, done.err
	return true
}

// loadRefusals remembers, per cluster, the restore whose load was refused for what its
// snapshot holds (its files changed after the check), apart from the checks of restoreFrom:
// the spec may name another restore by then (one still being checked) or none, and the one
// under way must still not be loaded again. A refusal holds until the cluster's spec changes
// (the user put the files back, or asks for something else): then one load is tried again.
// In memory: an operator restart tries once more, refused before any node is touched.
type loadRefusals struct {
	mu sync.Mutex
	m  map[types.UID]loadRefusal
}

type loadRefusal struct {
	id, why string
	gen     int64
}

func (l *loadRefusals) record(cluster types.UID, id string, gen int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[types.UID]loadRefusal{}
	}
	l.m[cluster] = loadRefusal{id: id, why: err.Error(), gen: gen}
}

// of says why a load of restore id was refused for cluster at generation gen ("": it was not,
// or the spec changed since).
func (l *loadRefusals) of(cluster types.UID, id string, gen int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.m[cluster]
	if !ok || r.id != id {
		return ""
	}
	if r.gen != gen {
		delete(l.m, cluster)
		return ""
	}
	return r.why
}

func (c *restoreChecks) Forget(cluster types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, cluster)
}

func (c *restoreChecks) Remembers(cluster types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[cluster]
	return ok
}

func (l *loadRefusals) Forget(cluster types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, cluster)
}

func (l *loadRefusals) Remembers(cluster types.UID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.m[cluster]
	return ok
}

// restoreSource resolves spec.restoreFrom to the store's spec, the store and the backup's
// directory in it.
func (r *Reconciler) restoreSource(ctx context.Context, vc *v1beta1.ValkeyCluster) (v1beta1.BackupStore, backup.Store, string, error) {
	rf := vc.Spec.RestoreFrom
	var spec v1beta1.BackupStore
	var dir string
	switch {
	case rf.Backup != "":
		var vb v1beta1.ValkeyBackup
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: rf.Backup}, &vb); err != nil {
			return spec, backup.Store{}, "", fmt.Errorf("restoreFrom.backup %s: %w", rf.Backup, client.IgnoreNotFound(err))
		}
		if vb.Status.Phase != v1beta1.BackupCompleted || vb.Status.Store == nil {
			return spec, backup.Store{}, "", fmt.Errorf("restoreFrom.backup %s is %s, not Completed", rf.Backup, phaseOrNotStarted(vb.Status.Phase))
		}
		spec, dir = *vb.Status.Store, vb.Status.Path
	case rf.Store != nil:
		spec, dir = *rf.Store, rf.Path
	default:
		return spec, backup.Store{}, "", errors.New("restoreFrom names no backup")
	}
	store, err := r.stores().Open(ctx, vc.Namespace, spec)
	return spec, store, dir, err
}

// restoreRequest is spec.restoreFrom as the machine sees it (vc defaulted; nil: none).
// phase is Verifying or Refused for a pending request. It also records in w where the
// snapshot is, for status.restore when the restore starts.
func (r *Reconciler) restoreRequest(ctx context.Context, vc *v1beta1.ValkeyCluster, p machine.Persisted, w *world) (req *machine.RestoreRequest, phase string) {
	spec := w.obs.Spec
	if vc.Spec.RestoreFrom == nil {
		return nil, ""
	}
	// Resolved once per generation of the spec: the credentials are read from the API
	// server, and this runs on every probe.
	fresh := restoreCheck{gen: vc.Generation}
	if ch := r.restores.get(vc.UID); ch != nil && ch.gen == vc.Generation {
		fresh.spec, fresh.store, fresh.path = ch.spec, ch.store, ch.path
	} else {
		var err error
		if fresh.spec, fresh.store, fresh.path, err = r.restoreSource(ctx, vc); err != nil {
			// Not found, not complete, no credentials: no ID to give yet, but a new cluster
			// must not open for writes meanwhile.
			return &machine.RestoreRequest{ID: "restoreFrom", Shards: spec.Shards, Pending: err.Error()}, "Refused"
		}
	}
	fresh.id = fresh.store.Location(fresh.path + "/")
	w.restoreSpec, w.restorePath = &fresh.spec, fresh.path
	req = &machine.RestoreRequest{ID: fresh.id, Snapshot: fresh.id, Shards: spec.Shards}
	if why := r.refusedLoads.of(vc.UID, fresh.id, vc.Generation); why != "" && fresh.id != p.Restored {
		// A load of it was refused (under way, or given back since): not again.
		return &machine.RestoreRequest{ID: fresh.id, Snapshot: fresh.id, Shards: spec.Shards, Pending: "refused: " + why}, "Refused"
	}
	if fresh.id == p.Restored || (p.State == machine.Restoring && p.Op.Restore.Request == fresh.id) {
		fresh.done, fresh.at = true, r.now()
		r.restores.want(vc.UID, fresh, r.now())
		return req, "" // done, or under way: checked before it started
	}
	ch, start := r.restores.want(vc.UID, fresh, r.now())
	if start {
		go r.verifyRestore(context.WithoutCancel(ctx), vc.DeepCopy(), ch, spec)
	}
	switch {
	case !ch.done:
		req.Pending, phase = "verifying the backup (sha256, RDB structure, shard count)", "Verifying"
	case ch.err != nil:
		req.Pending, phase = "refused: "+ch.err.Error(), "Refused"
	default:
		req.Shards = len(ch.m.Shards)
	}
	return req, phase
}

// verifyRestore checks a backup before anything is touched and records the outcome (and an
// Event), then wakes the cluster's turn.
func (r *Reconciler) verifyRestore(ctx context.Context, vc *v1beta1.ValkeyCluster, ch restoreCheck, spec machine.Spec) {
	// Bounded, generously: reading a large backup takes a while (50 MB/s is 20 minutes for
	// 60 GB), and the check reads all of it.
	ctx, cancel := context.WithTimeout(ctx, 6*time.Hour)
	defer cancel()
	ch.m, ch.err = backup.VerifyBackup(ctx, ch.store, ch.path, spec.Mode, spec.Shards)
	if ch.err == nil && spec.Mode == machine.ModeCluster {
		ch.err = sameSplit(ch.m)
	}
	ch.at = r.now()
	if !r.restores.finish(vc.UID, ch) {
		return // restoreFrom changed meanwhile
	}
	defer r.prober.poke(vc) // its outcome goes to status now
	if ch.err != nil {
		again := fmt.Sprintf("checked again in %s", refusedRecheck)
		if backup.Refused(ch.err) {
			again = "checked again once the cluster's spec changes"
		}
		r.event(vc, corev1.EventTypeWarning, "RestoreRefused", "%s: %v; nothing was touched and the cluster keeps serving (%s)", ch.id, ch.err, again)
		return
	}
	r.event(vc, corev1.EventTypeNormal, "RestoreVerified", "%s: %d shard(s), every file matches its sha256 and is a valid RDB (credentials: %s)", ch.id, len(ch.m.Shards), ch.store.CredentialsSource())
}

// restoreSnapshot is the real RestoreSnapshot: the shard's file of the snapshot the action
// names is loaded into the node (backup.Load: the operator serves it as a primary would, the
// node then detaches) and the node opens for replicas, as the simulator's world does; client
// writes stay fenced until the machine opens them. The node's new replication IDs are recorded
// as the restore's histories.
func restoreSnapshot(ctx context.Context, x actuation, a machine.RestoreSnapshot) error {
	r, vc, w := x.r, x.vc, x.w
	podIP, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	if why := r.refusedLoads.of(vc.UID, a.RequestID, vc.Generation); why != "" {
		// Another shard's load was refused this turn: this one is not begun either, so that
		// no shard's data changes while the restore may still give the cluster back.
		return fmt.Errorf("shard %d not loaded: a load of %s was refused: %s", a.Shard, a.RequestID, why)
	}
	store, dir, err := r.snapshotStore(ctx, vc, a.Snapshot)
	if err != nil {
		return err
	}
	m, err := backup.ReadManifest(ctx, store, dir)
	if err != nil {
		return r.loadFailed(vc, a, err)
	}
	idx := slices.IndexFunc(m.Shards, func(s backup.Shard) bool { return s.Index == a.Shard })
	if idx < 0 {
		return fmt.Errorf("%s has no shard %d", a.Snapshot, a.Shard)
	}
	s := m.Shards[idx]
	if err := w.pool.Alive(ctx, podIP, a.RunID); err != nil {
		return err
	}
	// The port the node listens on (its TLS port when it serves no plain one): only the local
	// address of the connection matters.
	addr, _ := w.pool.TLSOf(podIP)
	listen, err := r.addressSeenBy(ctx, addr)
	if err != nil {
		return err
	}
	target := backup.Target{Addr: addr, User: valkey.UserOperator, Password: w.passwords.Operator, MasterUser: valkey.UserReplication, MasterPassword: w.passwords.Replication}
	_, target.TLS = w.pool.TLSOf(podIP)
	start := time.Now()
	if w.obs.Spec.Mode == machine.ModeCluster {
		if err := r.loadClusterNode(ctx, w, a, podIP, target, store, path.Join(dir, s.File), s); err != nil {
			return r.loadFailed(vc, a, err)
		}
	} else if err := backup.Load(ctx, target, listen, store, path.Join(dir, s.File), backup.Result{Size: s.Size, SHA256: s.SHA256}); err != nil {
		return r.loadFailed(vc, a, fmt.Errorf("loading %s into %s: %w", s.File, a.Node, err))
	}
	if err := w.pool.OpenSync(ctx, podIP, a.RunID); err != nil {
		return err
	}
	v, err := w.pool.Survey(ctx, podIP)
	if err != nil {
		return err
	}
	w.addRestoredHistories(v.ReplID, v.ReplID2)
	r.event(vc, corev1.EventTypeNormal, "SnapshotLoaded", "shard %d: %s loaded %s (%d bytes) in %s", a.Shard, a.Node, path.Join(a.Snapshot, s.File), s.Size, time.Since(start).Round(time.Millisecond))
	return nil
}

// loadFailed passes a load's error on, and records a refusal of the snapshot for its content
// (backup.Refused: its files are not the ones checked, or not loadable): the machine learns it
// from the request, and decides whether the cluster is given back or waits.
func (r *Reconciler) loadFailed(vc *v1beta1.ValkeyCluster, a machine.RestoreSnapshot, err error) error {
	if backup.Refused(err) {
		r.refusedLoads.record(vc.UID, a.RequestID, vc.Generation, err)
		r.event(vc, corev1.EventTypeWarning, "RestoreRefused", "%s: shard %d: the load into %s was refused: %v; it is not tried again until the cluster's spec changes", a.RequestID, a.Shard, a.Node, err)
	}
	return err
}

// loadClusterNode is RestoreSnapshot in cluster mode, where Valkey refuses REPLICAOF: the node
// takes its shard's slots over if it is a replica (CLUSTER FAILOVER TAKEOVER, as Promote does for
// a failover: the machine loads only once the shard's primary is fenced or gone), must then serve
// exactly the slots the shard served in the backup (else nothing is touched), and is loaded key
// by key (backup.LoadByRestore) with the commands that takes granted for the load only.
func (r *Reconciler) loadClusterNode(ctx context.Context, w *world, a machine.RestoreSnapshot, podIP string, target backup.Target, store backup.Store, file string, s backup.Shard) error {
	v, err := w.pool.Survey(ctx, podIP)
	if err != nil {
		return err
	}
	if v.Role != machine.RolePrimary {
		if err := w.pool.Promote(ctx, podIP, a.RunID); err != nil {
			return fmt.Errorf("%s takes shard %d's slots over before the load: %w", a.Node, a.Shard, err)
		}
		if err := w.pool.Fence(ctx, podIP, a.RunID); err != nil {
			return err
		}
		if v, err = w.pool.Survey(ctx, podIP); err != nil {
			return err
		}
	}
	if slotSet(v.Slots) != slotSet(s.Slots) {
		return fmt.Errorf("%s serves slots %v, shard %d served %v in the backup: nothing was loaded", a.Node, v.Slots, a.Shard, s.Slots)
	}
	if err := w.pool.AllowRestore(ctx, podIP); err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := w.pool.RevokeRestore(rctx, podIP); err != nil {
			logFrom(ctx).Info("taking the restore's commands back failed; the next load or a restart does", "node", a.Node, "error", err.Error())
		}
	}()
	target.MinReplicasToWrite = strconv.Itoa(w.obs.Spec.MinSyncReplicas)
	if _, err := backup.LoadByRestore(ctx, target, store, file, backup.Result{Size: s.Size, SHA256: s.SHA256}, s.Slots); err != nil {
		return fmt.Errorf("loading %s into %s: %w", s.File, a.Node, err)
	}
	return nil
}

// sameSplit refuses a cluster backup whose shards served other slots than the operator's
// balanced split gives them (machine.SlotPlan: what a new cluster is bootstrapped with and what
// a resharding ends at): each shard's file is loaded into the shard, whose node must serve every
// key's slot.
func sameSplit(m backup.Manifest) error {
	plan := machine.SlotPlan(len(m.Shards))
	for i, s := range m.Shards {
		if slotSet(s.Slots) != slotSet(plan[i:i+1]) {
			return fmt.Errorf("shard %d served slots %v in the backup, the cluster's shard %d serves %v: the operator restores a Cluster backup onto the slots it was taken from only", i, s.Slots, i, plan[i])
		}
	}
	return nil
}

// slotSet is the set of slots ranges cover.
func slotSet(ranges []machine.SlotRange) (set [machine.NumSlots]bool) {
	for _, r := range ranges {
		for slot := max(r.Start, 0); slot <= r.End && slot < machine.NumSlots; slot++ {
			set[slot] = true
		}
	}
	return set
}

// snapshotStore finds the store of the snapshot an action names: the one recorded in
// status.restore when the restore started, else the one restoreFrom names now when its location
// is the action's.
func (r *Reconciler) snapshotStore(ctx context.Context, vc *v1beta1.ValkeyCluster, location string) (backup.Store, string, error) {
	if rs := vc.Status.Restore; rs != nil && rs.HistoriesOf == location && rs.Store != nil {
		store, err := r.stores().Open(ctx, vc.Namespace, *rs.Store)
		return store, rs.Path, err
	}
	if vc.Spec.RestoreFrom != nil {
		_, store, dir, err := r.restoreSource(ctx, vc)
		if err == nil && store.Location(dir+"/") == location {
			return store, dir, nil
		}
	}
	return backup.Store{}, "", fmt.Errorf("the store of the snapshot %s being restored is neither recorded in status.restore nor what spec.restoreFrom names: name it again so that the restore can finish", location)
}

// addressSeenBy is the operator's address as the node at addr sees it: where the node can
// reach back to be served the snapshot.
func (r *Reconciler) addressSeenBy(ctx context.Context, addr string) (string, error) {
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: r.Options.Valkey.LocalAddr()}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.TCPAddr).IP.String(), nil
}

// maxRestoreHistories bounds status.restore.histories: the IDs the nodes hold now and a few
// before them are enough to recognise every node.
const maxRestoreHistories = 16

// markRestored sets Snapshot on every observed node whose data comes from the restore recorded
// in status (its replication ID, or the one it had before a promotion, is among the restore's
// histories) and returns the histories with the IDs such nodes hold now added (nil: no
// restore recorded).
func markRestored(rs *v1beta1.RestoreStatus, nodes []machine.Node) []string {
	if rs == nil || len(rs.Histories) == 0 {
		return nil
	}
	known := slices.Clone(rs.Histories)
	for i := range nodes {
		v := &nodes[i].Valkey
		if !nodes[i].Reachable || v.ReplID == "" {
			continue
		}
		if slices.Contains(known, v.ReplID) || (v.ReplID2 != "" && slices.Contains(known, v.ReplID2)) {
			v.Snapshot = rs.HistoriesOf
			if !slices.Contains(known, v.ReplID) {
				known = append(known, v.ReplID)
			}
		}
	}
	if len(known) > maxRestoreHistories {
		known = known[len(known)-maxRestoreHistories:]
	}
	return known
}

// addRestoredHistories records IDs of a node that loaded the snapshot.
func (w *world) addRestoredHistories(ids ...string) {
	w.restoreMu.Lock()
	defer w.restoreMu.Unlock()
	for _, id := range ids {
		if id != "" && !slices.Contains(w.restoredHistories, id) {
			w.restoredHistories = append(w.restoredHistories, id)
		}
	}
}

// restoreStatus is status.restore after this turn: the request's progress, and the histories of
// the restored data (of the restore under way, or else of the last one completed).
func restoreStatus(vc *v1beta1.ValkeyCluster, w *world, p machine.Persisted) *v1beta1.RestoreStatus {
	old := vc.Status.Restore
	st := &v1beta1.RestoreStatus{}
	if old != nil {
		*st = *old
	}
	if req := w.obs.Spec.Restore; req != nil {
		st.ID, st.Location, st.Reason = req.ID, req.Snapshot, ""
		switch {
		case p.Restored == req.ID:
			st.Phase = "Completed"
		case req.Pending != "":
			st.Phase, st.Reason = w.restorePhase, req.Pending
		case p.State == machine.Restoring && p.Op.Restore.Request == req.ID:
			st.Phase = "Restoring"
		default:
			st.Phase = "Verified"
		}
	}
	if w.histories != nil {
		st.Histories = w.histories
	}
	if p.State == machine.Restoring && p.Op.Restore.Request != st.HistoriesOf {
		// A new restore: the data it replaces is not the restored data any more. Where its
		// snapshot is is recorded now, so that it finishes whatever restoreFrom says next.
		st.HistoriesOf, st.Histories, st.Store, st.Path = p.Op.Restore.Request, nil, nil, ""
		if req := w.obs.Spec.Restore; req != nil && req.ID == p.Op.Restore.Request && w.restoreSpec != nil {
			st.Store, st.Path = w.restoreSpec, w.restorePath
		}
	}
	for _, id := range w.restoredHistories {
		if !slices.Contains(st.Histories, id) {
			st.Histories = append(st.Histories, id)
		}
	}
	if st.ID == "" && st.HistoriesOf == "" {
		return nil
	}
	return st
}

// phaseOrNotStarted names a backup's phase for a message ("not started" when it has none).
func phaseOrNotStarted(p v1beta1.BackupPhase) string {
	if p == "" {
		return "not started"
	}
	return string(p)
}
