package sim

import (
	"fmt"
	"sort"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// World is the simulated cluster: pods and Valkey nodes, the network between them, the
// operator's and the client's place in it, the owned objects, the user's spec, the cluster's
// slot owners, and the record of every client write.
type World struct {
	topo Topology
	// actingClock and actingSkew: the clock of the operator incarnation whose action is being
	// applied (a seal records its time on it).
	actingClock string
	actingSkew  int64
	// journaling: the operator keeps a journal with observations (Options.Journal).
	journaling bool
	tick       int64
	nodes      []*node // sorted by shard then ordinal
	// podChanges counts pods created and deleted: a decision with nothing to do is not a
	// settled cluster when a pod changed after it was observed (see Sim.Converge).
	podChanges int

	ipSeq, runSeq, replSeq int

	// Sides of the current partition: two endpoints talk only when on the same side.
	operatorSide, clientSide int
	// oneWay: the partition drops only the messages sent from side dropFrom to the other
	// (FaultPartitionOneWay); messages the other way arrive. The operator and the client need
	// both ways (a request and its answer), so for them it is a partition all the same.
	oneWay   bool
	dropFrom int

	objects machine.Objects
	spec    machine.Spec
	// sentinels is the Sentinel topology's sentinels, once started (sentinel_topology.go);
	// sentinelOverlap the pairs of processes (run IDs) that may both take writes by
	// Sentinel's design: the first promoted by Sentinel (at the tick kept) while the second
	// was a primary; sentinelPicked, per process Sentinel promoted open, how many writes had
	// been made when it was (those it lacked then are lost by Sentinel's choice).
	sentinels       *SentinelWorld
	sentinelOverlap map[[2]string]int64
	sentinelPicked  map[string]int
	// slots is the ground truth of which shard serves which slots (cluster mode).
	slots        [][]machine.SlotRange
	slotsVersion int
	// freed holds, per shard, the slots it served last that no shard serves now (their
	// claims all forgotten): the keys of those slots stay on the nodes that hold them.
	freed [][]machine.SlotRange

	writes []writeRecord
	// lines holds, per shard, the shard's line of writes: the data of the primary the
	// operator recorded last (or that took over by hand-over), extended by the writes it
	// accepted since. A node whose data is a prefix of the line holds the shard's data; a
	// node with writes off the line holds a forked history (an isolated old primary's).
	lines     [][]int32
	lineSets  []bitset
	holders   []holder
	snapshots []snapshot
	restores  int
	// retained holds, with persistence, the nodes a scale-down removed: their volume claims
	// are kept and a later scale-up starts the pod of that ordinal from the old data. The
	// operator's StatefulSets delete them (whenScaled: Delete); the world keeps them, a
	// superset: claims do stay behind in a real cluster (a hibernation woken with fewer pods
	// keeps the others' claims, a deletion can lag or fail), and a stale volume coming back is
	// what the machine must survive.
	retained map[string]*node
	// recorded is the operator's record of each shard's primary, as the status says.
	recorded []machine.ShardRecord

	// incarnations counts the operator processes so far (each reads a clock of its own).
	incarnations int

	// The cluster bus (bus.go): node IDs handed out so far, and the IDs no process has any
	// more.
	idSeq int
	// shardIDSeq: the shard ids handed out so far (node.shardID).
	shardIDSeq int
	ghosts     map[string]ghost
	// shared is share's scratch space, emptied on every call: new maps per gossip were a
	// twentieth of an exploration's time.
	shared busScratch

	// oracle: where each client write was taken, for the check of the election model's
	// claims (oracle.go).
	oracle oracle

	violations []Violation
	trace      *trace
	stats      Stats
	sabotage   Sabotage

	// Password rotation (passwords.go): the rotation the operator prepared, how many were
	// requested, and what the auth Secret publishes.
	rotation  string
	rotations int
	published machine.PasswordsObject

	// certFile is the serving certificate in the TLS Secret, as mounted on every pod ("": the
	// cluster serves no TLS; it does from the first renew-certificate step on), certs how many
	// were issued.
	certFile string
	certs    int
}

// writeRecord is one write the client got acknowledged.
type writeRecord struct {
	id   int32
	key  int
	node string
	// runID is the process that acknowledged it.
	runID string
	tick  int64
	// waitAcked: WAIT MinSyncReplicas confirmed it. exempt: faults destroyed every replica
	// copy, or a restore discarded it, so losing it is not the operator's doing.
	waitAcked bool
	exempt    bool
}

// holder is the process whose writes extend a shard's line.
type holder struct {
	name, runID string
}

type snapshot struct {
	id           string
	slotsVersion int
	logs         [][]int32 // by shard
	// spoiled is how a load of it is refused (a spoiled UserRestore): 0 it is not, 1 before the node
	// is touched, 2 after the node was emptied (cluster mode) or detached (the others).
	spoiled int
}

// Stats counts what happened in a world.
type Stats struct {
	Ticks          int64
	Writes         int
	WritesRejected int
	WaitAcked      int
	Faults         map[FaultKind]int
	Transitions    int
	// Edges counts the transitions taken per table edge ("From --event--> To").
	Edges          map[string]int
	Actions        int
	ActionsRefused int
	Reconciles     int
	// Claims counts the election model's measured containment claims the oracle checked,
	// Estimates those resting on key counts (counted, not checked); each once per decision.
	Claims, Estimates int
	// DeposedWaits counts the decisions that waited for a person to give up a deposed pod's
	// keys (machine.WaitDeposedMayHoldTheLine); DeposedGivenUp the pods the user gave up.
	DeposedWaits, DeposedGivenUp int
	// SentinelLostWrites counts the WAIT-acknowledged writes lost by Sentinel's choice of a
	// primary, SentinelOverlapTicks the ticks two primaries took writes by its design (the
	// Sentinel topology: sentinelPromoted).
	SentinelLostWrites, SentinelOverlapTicks int
}

// node is one pod with its Valkey process.
type node struct {
	// pw is what the process accepts and sends of the rotation's passwords (passwords.go).
	pw passwordState
	// served is the certificate the process serves (loaded at start and by reload-certificate).
	served string

	name           string
	shard, ordinal int

	// The pod.
	exists   bool // the pod object exists
	ip       string
	revision string
	keepData bool // when the pod is recreated: does its volume still hold the data
	// volumeFromBefore: the pod's claim is older than the cluster object (kept when the
	// cluster was deleted and applied again).
	volumeFromBefore bool
	// volumeBytes is the size the pod's claim asks for.
	volumeBytes int64

	// terminating: the pod's graceful deletion was asked for (FaultEvictPod); it goes once
	// its preStop hook returns, at terminateBy at the latest.
	terminating bool
	terminateBy int64
	// held: the preStop hook has held the pod as a primary with a replica; once that ends (a
	// hand-over) it lingers until lingerUntil, so that the operator sees the node follow its
	// new primary (the hand-over's own evidence) before the pod goes.
	held        bool
	lingerUntil int64

	// The process.
	running     bool  // the container runs
	startsAt    int64 // answers from this tick on
	pausedUntil int64 // frozen (SIGSTOP) until this tick
	runID       string

	// Replication state, as Valkey reports it.
	role         machine.Role
	replID       string
	replID2      string
	secondOffset int64 // Valkey's second_repl_offset: the previous history is valid below it

	// The data: the writes in order and the same as a set. The offset Valkey reports is the
	// length minus base: a node restarted from its append-only file counts from 0 again
	// under a fresh ID (base is then the length it came back with), and a replica takes its
	// master's base with a full sync.
	log  []int32
	has  bitset
	base int64
	// disk is the data a killed process finds in its append-only file: its log as it was at
	// the start of the previous tick (pending, at the start of this one). Valkey with
	// appendfsync everysec postpones the write to the file while a background fsync runs (up
	// to two seconds) and replies meanwhile, so a SIGKILL loses up to two seconds of
	// acknowledged writes. A graceful stop (pod deletion) flushes the file first.
	disk, pending []int32
	// gen changes whenever the data is replaced or the replication ID changes: replicas
	// connected to this node must then handshake again.
	gen int

	// backlog: the process has a replication backlog (it synced as a replica or served one).
	// A primary without one takes a new replication ID, clearing the previous one, when its
	// first replica syncs, as Valkey does.
	backlog bool

	masterIP string
	linkUp   bool
	heardAt  int64  // the tick the replica last heard from its master over the link
	linkRun  string // master's run id when the link was established
	linkGen  int    // master's gen when the link was established
	lagTicks int    // slow link: receives only every lagTicks+1 ticks
	// handshakeTo and handshakeRun: a handshake in flight to the master at that IP, running that
	// process, which already counts this replica (it answered the replica's PSYNC and marked it
	// online) while its reply has not reached the replica, whose link is still down (seal.go).
	handshakeTo, handshakeRun string
	// seal is what the operator's Seal left on the process (seal.go).
	seal machine.SealRecord
	// demoteTo and demoteAt: a primary finishing FAILOVER TO, whose target already promoted
	// itself, still says primary (taking no writes: FAILOVER pauses them) and follows the
	// target at IP demoteTo from tick demoteAt on, as Valkey does a moment later.
	demoteTo string
	demoteAt int64

	writesFenced bool
	syncFenced   bool
	// heldBack: replica-priority 0 with the replication user on (HoldBack); every action
	// that sets the replication user sets the priority again.
	heldBack bool
	snapshot string

	// Cluster mode (bus.go): what nodes.conf keeps on the volume (the node's ID, its claim on
	// its shard's slots, the node it replicates, the address it knows each other node at), and
	// what follows from it. volumeLost: the next start finds an empty volume (a new node).
	id       string
	claim    int
	current  int // the highest epoch it has heard of (currentEpoch): a new claim is one above
	masterID string
	peersAt  map[string]string
	detached bool   // Detach in cluster mode: its replication password is refused
	linked   bool   // it has a bus link to another node (set by gossip)
	lostTo   string // the ID that took its slots over, while it serves none
	// shardID is the shard id Valkey keeps for it: a replica takes its primary's, a takeover
	// keeps its own, and a primary starting from nodes.conf gets a new one (the pod's start
	// script removes the shard ids, ClusterStartScript). A primary left without slots follows
	// the new owner only when their shard ids are the same (bus.go).
	shardID    int
	lostAt     int64 // when it lost them
	followedAt int64 // when it started following masterID
	volumeLost bool

	side        int
	operatorCut bool

	// tainted: the node lost the data it held in a restart (or took its data from such a node)
	// and has not resynced from a sound node since.
	tainted bool

	acks []ack // on a primary: last acknowledgement per replica

}

type ack struct {
	replica string
	tick    int64
}

// NewWorld builds the world of a topology before the operator ever ran: no pods yet.
func NewWorld(t Topology) *World {
	w := &World{topo: t, spec: t.initialSpec()}
	w.stats.Faults = map[FaultKind]int{}
	w.stats.Edges = map[string]int{}
	return w
}

func nodeName(shard, ordinal int) string {
	if shard >= 0 && shard < len(nodeNames) && ordinal >= 0 && ordinal < len(nodeNames[shard]) {
		return nodeNames[shard][ordinal]
	}
	return fmt.Sprintf("s%d-%d", shard, ordinal)
}

// nodeNames holds the names of the topologies' pods: nodeName is called on every lookup of a
// node, and formatting them was a fortieth of an exploration's time.
var nodeNames = func() (names [8][8]string) {
	for s := range names {
		for o := range names[s] {
			names[s][o] = fmt.Sprintf("s%d-%d", s, o)
		}
	}
	return names
}()

func (w *World) newIP() string {
	w.ipSeq++
	return fmt.Sprintf("10.0.%d.%d", w.ipSeq/250, w.ipSeq%250+1)
}
func (w *World) newRunID() string { w.runSeq++; return fmt.Sprintf("run%04d", w.runSeq) }
func (w *World) newReplID() string {
	w.replSeq++
	return fmt.Sprintf("repl%04d", w.replSeq)
}

// responsive: the process runs, has started and is not frozen.
func (w *World) responsive(n *node) bool {
	return n.exists && n.running && w.tick >= n.startsAt && w.tick >= n.pausedUntil
}

// talk: two nodes can exchange messages (both ways: a connection, a request and its answer).
func (w *World) talk(a, b *node) bool {
	return w.reaches(a, b) && w.reaches(b, a)
}

// reaches: what a sends arrives at b (with a one-way partition, maybe not the reverse).
func (w *World) reaches(a, b *node) bool {
	return w.responsive(a) && w.responsive(b) && (a.side == b.side || w.oneWay && a.side != w.dropFrom)
}

// operatorTalks: the operator's survey and actions reach the node.
func (w *World) operatorTalks(n *node) bool {
	return w.responsive(n) && !n.operatorCut && n.side == w.operatorSide
}

// clientTalks: the client reaches the node.
func (w *World) clientTalks(n *node) bool {
	return w.responsive(n) && n.side == w.clientSide
}

func (w *World) byName(name string) *node {
	for _, n := range w.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

func (w *World) byIP(ip string) *node {
	if ip == "" {
		return nil
	}
	for _, n := range w.nodes {
		if n.exists && n.ip == ip {
			return n
		}
	}
	return nil
}

func (w *World) shardNodes(s int) []*node {
	var out []*node
	for _, n := range w.nodes {
		if n.shard == s {
			out = append(out, n)
		}
	}
	return out
}

// resolve finds the node a NodeRef names now. "Primary of a shard" is the node that would
// accept writes, else a node that believes it is a primary, else ordinal 0.
func (w *World) resolve(r NodeRef) *node {
	if !r.Primary {
		return w.byName(nodeName(r.Shard, r.Ordinal))
	}
	var believer *node
	for _, n := range w.shardNodes(r.Shard) {
		if w.acceptsWrites(n) {
			return n
		}
		if believer == nil && n.exists && n.role == machine.RolePrimary && !n.writesFenced {
			believer = n
		}
	}
	if believer != nil {
		return believer
	}
	return w.byName(nodeName(r.Shard, 0))
}

// kube plays the StatefulSet controller: pods the objects ask for are created (or recreated
// after a deletion, on a new IP), pods they no longer ask for are deleted: the highest
// ordinals when a shard's StatefulSet shrinks (with persistence their volume claims are
// retained and a later scale-up starts from them: see World.retained), every pod of a removed
// shard (with its volumes).
func (w *World) kube() {
	kept := w.nodes[:0]
	for _, n := range w.nodes {
		if n.shard < w.objects.Shards && n.ordinal <= w.objects.Replicas {
			kept = append(kept, n)
			continue
		}
		if n.shard >= w.objects.Shards {
			w.bury(n)
			w.wiped(n, "pod removed with its shard")
			w.note("kube: %s removed with its shard", n.name)
			continue
		}
		if w.objects.Replicas == machine.StoppedReplicas && w.topo.Persistence {
			// A hibernation: the pod stops, its claim stays with the data (whenScaled Retain).
			w.note("kube: %s stopped (hibernation; its claim is kept)", n.name)
		} else {
			// The operator's own scale-down is no fault: a WAIT-acknowledged write it leaves
			// on fewer nodes is not exempt, and losing it later counts against it.
			w.checkScaleDown(n)
			w.note("kube: %s removed by the scale-down", n.name)
		}
		if !w.topo.Persistence {
			w.bury(n)
		} else {
			n.exists, n.running, n.keepData = false, false, true
			if w.retained == nil {
				w.retained = map[string]*node{}
			}
			w.retained[n.name] = n
		}
	}
	w.nodes = kept
	for s := 0; s < w.objects.Shards; s++ {
		for o := 0; o <= w.objects.Replicas; o++ {
			n := w.byName(nodeName(s, o))
			if n == nil && w.retained[nodeName(s, o)] != nil {
				n = w.retained[nodeName(s, o)]
				delete(w.retained, n.name)
				n.side, n.operatorCut = 0, false
				w.nodes = append(w.nodes, n)
				w.createPod(n, n.keepData)
				w.note("kube: %s created at %s (%s) on its retained volume (%d writes, history %s)", n.name, n.ip, n.revision, len(n.log), n.replID)
				continue
			}
			if n == nil {
				n = &node{name: nodeName(s, o), shard: s, ordinal: o, side: 0}
				w.nodes = append(w.nodes, n)
				w.createPod(n, false)
				w.note("kube: %s created at %s (%s)", n.name, n.ip, n.revision)
				continue
			}
			if !n.exists {
				w.createPod(n, n.keepData)
				w.note("kube: %s recreated at %s (%s)", n.name, n.ip, n.revision)
			}
		}
	}
	sort.Slice(w.nodes, func(i, j int) bool {
		if w.nodes[i].shard != w.nodes[j].shard {
			return w.nodes[i].shard < w.nodes[j].shard
		}
		return w.nodes[i].ordinal < w.nodes[j].ordinal
	})
}

// createPod gives n a pod on a new IP at the objects' revision and starts its process.
func (w *World) createPod(n *node, keepData bool) {
	w.podChanges++
	if n.volumeBytes == 0 {
		n.volumeBytes = w.spec.StorageBytes // a new claim, from the claim template
	}
	n.exists = true
	n.ip = w.newIP()
	n.revision = w.objects.Revision
	n.running = true
	w.startProcess(n, keepData, false)
}

// startProcess starts a new Valkey process on n. The pod template makes every process start
// fenced (client writes and replication refused until the operator opens them) and as a
// replica of nothing (a placeholder that never answers). With persistence (the Durable
// profile: an append-only file) a node restarted from its volume keeps its data but, as
// Valkey 8 does, not its place in the history: a fresh ID at offset 0. Without persistence
// a kept volume holds an RDB file, from which Valkey restores the replication ID and offset
// saved with the data, so the node still names the history its data belongs to. Without its
// data a node starts empty with a fresh ID, and if it held data before, it is tainted.
func (w *World) startProcess(n *node, keepData, tainting bool) {
	n.runID = w.newRunID()
	n.startsAt = w.tick + startTicks
	n.pausedUntil = 0
	n.role = machine.RoleReplica
	n.masterIP, n.linkUp, n.linkRun, n.linkGen, n.lagTicks = "", false, "", 0, 0
	n.handshakeTo, n.handshakeRun, n.seal = "", "", machine.SealRecord{}
	n.demoteTo, n.demoteAt = "", 0
	// The start-up fence: the pod template makes every process start with the application
	// and replication users off, until the operator opens them.
	fence := w.sabotage != SabotageNoStartFence
	n.writesFenced, n.syncFenced = fence, fence
	n.heldBack = false
	n.acks = nil
	n.pw = w.fromFile()
	n.served = w.certFile
	n.gen++
	n.backlog = false
	n.replID2, n.secondOffset = "", -1
	defer w.startOnBus(n)
	if keepData {
		if w.topo.Persistence {
			n.replID, n.base = w.newReplID(), int64(len(n.log))
		}
		return
	}
	if tainting && len(n.log) > 0 {
		w.wiped(n, "restarted without data")
		n.tainted = true
	}
	n.log, n.has, n.base = nil, nil, 0
	n.disk, n.pending = nil, nil
	n.replID = w.newReplID()
	n.snapshot = ""
}

// startOnBus is the cluster-mode part of a start: on a volume that kept its nodes.conf the node
// is what it was, on an empty one a new node.
func (w *World) startOnBus(n *node) {
	if w.topo.Mode != machine.ModeCluster {
		return
	}
	if n.id == "" || n.volumeLost {
		n.volumeLost = false
		w.freshIdentity(n)
		return
	}
	w.fromNodesConf(n)
}

// restart kills and restarts n's process in place (same pod, same IP). With persistence but
// without appendfsync always, the process comes back with what its file had (node.disk).
func (w *World) restart(n *node, keepData bool) {
	if !n.exists {
		return
	}
	n.running = true
	if keepData && w.topo.Persistence && !w.topo.FsyncAlways {
		w.loseUnflushed(n)
	}
	w.startProcess(n, keepData, !keepData)
}

// flushTick moves every node's append-only file one tick on (see node.disk). The slices are
// views with their capacity cut at their length: a log only grows by append or is replaced,
// so a view never changes under it.
func (w *World) flushTick() {
	for _, n := range w.nodes {
		n.disk, n.pending = n.pending, n.log[:len(n.log):len(n.log)]
	}
}

// loseUnflushed puts back into n's data what its append-only file holds after a SIGKILL.
func (w *World) loseUnflushed(n *node) {
	var kept bitset
	for _, id := range n.disk {
		kept.set(id)
	}
	lost := 0
	for _, id := range n.log {
		if !kept.get(id) {
			lost++
		}
	}
	if lost == 0 && len(n.disk) == len(n.log) {
		return
	}
	w.dropped(n, func(id int32) bool { return !kept.get(id) }, "lost its unflushed append-only writes in a kill")
	w.note("%s killed: its append-only file lacks %d write(s) it held (appendfsync everysec)", n.name, lost)
	n.log, n.has = append([]int32(nil), n.disk...), kept
	n.pending = n.log[:len(n.log):len(n.log)]
	n.disk = n.pending
}

// deletePod deletes n's pod; kube recreates it on a new IP. keepData says whether its volume
// survives.
func (w *World) deletePod(n *node, keepData bool) {
	if !n.exists {
		return
	}
	w.podChanges++
	// Whatever deleted it, a preStop hold is over with the pod.
	n.exists, n.running, n.terminating, n.held, n.lingerUntil = false, false, false, false, 0
	n.keepData = keepData
	if !keepData && w.topo.Mode != machine.ModeCluster {
		// Without persistence the claim holds nothing a process starts from: the model treats
		// it as new. In cluster mode it still holds nodes.conf, which the node starts from.
		n.volumeFromBefore = false
		n.volumeBytes = 0
	}
	if !keepData && len(n.log) > 0 {
		w.wiped(n, "pod deleted without its data")
		n.log, n.has, n.base = nil, nil, 0
		n.disk, n.pending = nil, nil
		n.tainted = true
	}
}

// evictions stops the pods whose graceful deletion is asked for once their preStop hook
// returns: the node is no primary with a linked replica (what ROLE lists), it does not answer
// (the hook gives up), or the hold is over. The process stops gracefully: its data is flushed.
func (w *World) evictions() {
	for _, n := range w.nodes {
		if !n.terminating || !n.exists {
			continue
		}
		if w.tick < n.terminateBy {
			if w.holdsForHandOver(n) {
				n.held = true
				continue
			}
			if n.held && n.lingerUntil == 0 {
				n.lingerUntil = w.tick + PreStopLingerTicks
			}
			if w.tick < n.lingerUntil {
				continue
			}
		}
		w.note("kube: %s stops (its preStop hook returned: %s)", n.name, map[bool]string{true: "hold over", false: "no primary with a replica"}[w.tick >= n.terminateBy])
		w.deletePod(n, w.topo.Persistence)
	}
}

// holdsForHandOver is what the preStop hook asks: is n running as a primary with a linked
// replica?
func (w *World) holdsForHandOver(n *node) bool {
	if !n.running || !w.responsive(n) || n.role != machine.RolePrimary {
		return false
	}
	for _, m := range w.shardNodes(n.shard) {
		if m != n && m.running && m.masterIP == n.ip && m.linkUp {
			return true
		}
	}
	return false
}

// recreate is the cluster object deleted and applied again: the StatefulSet and every pod go
// (with the objects, so kube does not recreate them before the new operator asks), the
// claims stay, older now than the cluster. Without persistence the volumes hold no data a
// process starts from; in cluster mode they still hold nodes.conf, so the nodes come back as
// the same nodes of a formed cluster (empty ones without persistence), to be adopted. The claim
// of ordinal lose of shard 0 (when >= 0) is deleted.
func (w *World) recreate(lose int) {
	w.objects = machine.Objects{}
	w.recorded = nil
	if w.retained == nil {
		w.retained = map[string]*node{}
	}
	for _, n := range w.nodes {
		keep := (w.topo.Persistence || w.topo.Mode == machine.ModeCluster) && (n.shard != 0 || n.ordinal != lose)
		w.deletePod(n, keep && w.topo.Persistence)
		n.side, n.operatorCut, n.pausedUntil = 0, false, 0
		if keep {
			n.volumeFromBefore = true
			w.retained[n.name] = n
		} else {
			w.bury(n)
		}
		w.note("kube: %s deleted with the cluster (claim kept: %v)", n.name, keep)
	}
	for _, n := range w.retained {
		n.volumeFromBefore = true
	}
	w.nodes = nil
}

// wiped records that n's data is destroyed by a restart or a deletion. WAIT MinSyncReplicas
// promises a write on that many nodes besides the primary, so that losing any one node
// loses no acknowledged write. Once faults have destroyed copies until a single node holds
// a write, that promise is void: the write now lives or dies with that node (a failover away
// from it while it is unreachable is what a failover is for), and losing it is not counted
// against the operator.
func (w *World) wiped(n *node, why string) {
	w.dropped(n, n.has.get, why)
}

// dropped records that n loses the writes lost says it loses (see wiped).
func (w *World) dropped(n *node, lost func(int32) bool, why string) {
	for i := range w.writes {
		wr := &w.writes[i]
		if !wr.waitAcked || wr.exempt || !n.has.get(wr.id) || !lost(wr.id) {
			continue
		}
		// Copies count in the shard that serves the key now: a migration moved the key (MIGRATE
		// deletes it from the source; the model leaves stale entries in the source's log).
		owner := w.shardOfKey(wr.key)
		holders := 0
		for _, m := range w.nodes {
			if m != n && m.exists && m.shard == owner && m.has.get(wr.id) {
				holders++
			}
		}
		if holders <= 1 {
			wr.exempt = true
			w.note("write %d exempt: %s %s and %d node(s) still hold it", wr.id, n.name, why, holders)
		}
	}
}

// setHolder makes n the process whose writes extend shard s's line, and its data the line.
func (w *World) setHolder(s int, n *node) {
	for len(w.lines) <= s {
		w.lines = append(w.lines, nil)
		w.lineSets = append(w.lineSets, nil)
		w.holders = append(w.holders, holder{})
	}
	w.holders[s] = holder{n.name, n.runID}
	w.lines[s] = append(w.lines[s][:0:0], n.log...)
	w.lineSets[s] = n.has.clone()
}

// extendLine records a write accepted by n on the line of its shard when n holds it.
func (w *World) extendLine(n *node, id int32) {
	if n.shard < len(w.holders) && w.holders[n.shard] == (holder{n.name, n.runID}) {
		w.lines[n.shard] = append(w.lines[n.shard], id)
		w.lineSets[n.shard].set(id)
	}
}

// onLineWrite reports whether write id is on shard s's line.
func (w *World) onLineWrite(s int, id int32) bool {
	return s < len(w.lineSets) && w.lineSets[s].get(id)
}

// onLine reports whether n's data is a prefix of its shard's line.
func (w *World) onLine(n *node) bool {
	return n.shard < len(w.lines) && isPrefix(n.log, w.lines[n.shard])
}

// slotOf maps a key to a hash slot. The simulated client uses 32 keys spread over the slot
// space so that every shard of every layout owns some.
func slotOf(key int) int { return (key%32)*(machine.NumSlots/32) + 100 }

// shardOfKey is the shard serving key now (-1: nobody).
func (w *World) shardOfKey(key int) int {
	if w.topo.Mode != machine.ModeCluster {
		return 0
	}
	slot := slotOf(key)
	for s, ranges := range w.slots {
		for _, r := range ranges {
			if slot >= r.Start && slot <= r.End {
				return s
			}
		}
	}
	return -1
}

// appendWrite appends write id to n's data.
// offset is master_repl_offset as Valkey reports it.
func (n *node) offset() int64 { return int64(len(n.log)) - n.base }

func (n *node) appendWrite(id int32) {
	n.log = append(n.log, id)
	n.has.set(id)
}

func (w *World) note(format string, args ...any) {
	if w.trace != nil {
		w.trace.note(w.tick, fmt.Sprintf(format, args...))
	}
}

// violate records a safety violation.
func (w *World) violate(kind ViolationKind, format string, args ...any) {
	v := Violation{Kind: kind, Tick: w.tick, Detail: fmt.Sprintf(format, args...)}
	w.violations = append(w.violations, v)
	w.note("VIOLATION %s: %s", v.Kind, v.Detail)
}

// bitset is a set of write ids.
type bitset []uint64

func (b bitset) get(i int32) bool {
	word := int(i >> 6)
	return word < len(b) && b[word]&(1<<(uint(i)&63)) != 0
}

func (b *bitset) set(i int32) {
	word := int(i >> 6)
	for len(*b) <= word {
		*b = append(*b, 0)
	}
	(*b)[word] |= 1 << (uint(i) & 63)
}

func (b bitset) clone() bitset { return append(bitset(nil), b...) }

// podStopping reports whether a pod's graceful deletion is under way: the StatefulSet
// re-creates it once it is gone, so the world is not at rest yet (a decision with nothing to
// do then is not a settled cluster: the pod's successor will need its role).
func (w *World) podStopping() bool {
	for _, n := range w.nodes {
		if n.exists && n.terminating {
			return true
		}
	}
	return false
}

// anyPod reports whether any pod of the cluster exists.
func (w *World) anyPod() bool {
	for _, n := range w.nodes {
		if n.exists {
			return true
		}
	}
	return false
}
