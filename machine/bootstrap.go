package machine

import (
	"fmt"
	"strings"
)

// Bootstrapping creates the objects and wires each shard to its first node: that node is
// promoted (serves replicas; writes stay fenced until Steady opens them), the others follow
// it, in cluster mode every node joins and the first node gets its planned slots.
//
// A new cluster may start on volumes that already hold data: a ValkeyCluster deleted and
// applied again keeps its claims (GitOps re-sync, a namespace restore, a moved release). The
// first node is then not free: every other node full-syncs from it and loses what it held.
// So before anything is promoted, every node whose volume is older than the cluster must
// answer (it may hold the newest data), and when any node holds keys, the node whose data
// contains every other's is elected and recorded (bootstrap-elected), by the same rules a
// failover compares nodes with: by replication history where the nodes report one, by key
// count where they cannot (restarted from append-only files). When no node holds all the
// others' data (histories forked), nothing is promoted and the machine says why; the user
// may name the pod whose data wins (Spec.BootstrapFrom), and the history says so.
// Without data anywhere the choice is free: a node that already serves replicas is preferred,
// so that an operator restart does not move it, else the lowest ordinal that answers.

func guardBootstrapComplete(d *decider) (outcome, bool) {
	if d.restoreAtBootstrap() != nil {
		return outcome{}, false // bootstrap-restore takes it
	}
	return d.bootstrapWired()
}

// restoreAtBootstrap is the restore a bootstrapping cluster carries out before it opens for
// writes: one requested, not carried out yet, of a snapshot of as many shards as the spec asks
// for (nil: none).
func (d *decider) restoreAtBootstrap() *RestoreRequest {
	r := d.v.spec.Restore
	if r == nil || r.ID == "" || r.ID == d.p.Restored || r.Shards != d.v.spec.Shards {
		return nil
	}
	return r
}

// guardBootstrapRestore ends a bootstrap as bootstrap-complete does and goes on to restore the
// requested snapshot: no client write is let in before the snapshot is loaded (Bootstrapping
// never opens writes; Restoring opens them only when restore-complete returns to Steady).
func guardBootstrapRestore(d *decider) (outcome, bool) {
	r := d.restoreAtBootstrap()
	if r == nil || r.Pending != "" {
		return outcome{}, false
	}
	o, ok := d.bootstrapWired()
	if !ok {
		return outcome{}, false
	}
	o.next.Op = Operation{Restore: Restore{Request: r.ID, Snapshot: r.Snapshot}}
	o.message += fmt.Sprintf("; restore %s before opening writes", restoreName(r.ID, r.Snapshot))
	return o, true
}

// bootstrapWired is the outcome of a finished bootstrap: every shard's first node serves
// replicas, the others follow it and the slots are assigned.
func (d *decider) bootstrapWired() (outcome, bool) {
	spec := d.v.spec
	next := d.p
	next.Shards = nil
	next.Op = Operation{}
	shards := d.bootShards(d.p)
	for s := 0; s < shards; s++ {
		first := d.firstNode(d.p, s)
		if first == nil || !d.shardWired(s, first) {
			return outcome{}, false
		}
		if spec.Mode == ModeCluster && SlotCount(first.Valkey.Slots) != slotQuota(s, shards) {
			return outcome{}, false
		}
		// An elected shard keeps its election's epoch and history: the first node continues it.
		rec, _ := elected(d.p, s)
		next.Shards = append(next.Shards, ShardRecord{Primary: first.Name, RunID: first.Valkey.RunID,
			History: historyOf(first).continuing(rec.History), Epoch: max(rec.Epoch, 1)})
	}
	// In cluster mode every node must see every slot served before clients are let in: a
	// cluster client takes its slot map from whichever node it asks (found on real Valkey: a
	// client seeded right after the bootstrap got "the slot has no node" from a node that gossip
	// had not told yet).
	if spec.Mode == ModeCluster && (len(d.slotMoves(Persisted{}, shards)) > 0 || len(d.slotMapBehind()) > 0) {
		return outcome{}, false
	}
	next.PodsPerShard = d.specPods()
	why := Reason{Kind: ReasonWired, Shards: shards, Pods: 1 + spec.Replicas, SpecShards: spec.Shards}
	if pods := d.objectPods(d.p); pods > d.specPods() {
		why.Pods, why.PodsKept = d.specPods(), pods
		if d.p.Op.Hibernation.Wake {
			why.Kept = KeptWake
		}
		for _, n := range d.v.nodes {
			if n.Ordinal >= d.specPods() && n.Pod.VolumeFromBefore {
				why.Kept = KeptVolumes
			}
		}
	}
	if shards > spec.Shards {
		why.Woken = d.p.Op.Hibernation.Wake
	}
	return outcome{next: next, why: why}, true
}

// SlotCount is how many slots the ranges hold.
func SlotCount(rs []SlotRange) int {
	n := 0
	for _, r := range rs {
		n += r.End - r.Start + 1
	}
	return n
}

// elected returns shard s's record from a bootstrap election in p, if there is one.
func elected(p Persisted, s int) (ShardRecord, bool) {
	if s >= len(p.Shards) || p.Shards[s].Primary == "" {
		return ShardRecord{}, false
	}
	return p.Shards[s], true
}

// firstNode is the node a new shard is wired to at bootstrap: the elected node while it runs
// as the process that was elected (p records the election); without an election, the free
// choice. It is nil while that cannot be chosen yet: the elected process is gone
// (bootstrap-elected elects again), a node whose volume is older than the cluster has not
// answered, or some node holds data (bootstrap-elected must choose).
func (d *decider) firstNode(p Persisted, s int) *Node {
	if rec, ok := elected(p, s); ok {
		if n := d.v.node(rec.Primary); alive(n, rec.RunID) {
			return n
		}
		return nil
	}
	if d.wakeWaits(p, s) != "" || len(d.openWriters(s)) > 0 || len(d.unseenVolumes(s)) > 0 || len(d.pendingClaims(s)) > 0 || len(d.holdingKeys(s)) > 0 || len(d.silentSlotServers(s)) > 0 {
		return nil
	}
	return d.freeChoice(s)
}

// openWriters lists the nodes of shard s that answer as primaries open to client writes. Nodes
// start with writes fenced and a bootstrap opens them only when it completes, so such a node
// kept running from before: a wake asked for before the pods stopped, after the hibernation's
// close-writes failed. A write it takes after the election would be lost when it follows the
// chosen node; its writes close first (bootstrapShard).
func (d *decider) openWriters(s int) []*Node {
	var out []*Node
	for _, n := range d.v.shard(s) {
		if usable(n) && n.Valkey.Role == RolePrimary && !n.Valkey.WritesFenced {
			out = append(out, n)
		}
	}
	return out
}

// freeChoice is the first node of a shard whose nodes hold nothing yet: in cluster mode one
// that serves slots already (a cluster re-created on kept claims without persistence: the node
// is back from nodes.conf as its shard's primary, empty, and Valkey refuses to make a node that
// serves slots anyone's replica), else one that already serves replicas (so that an operator
// restart does not move the choice), else the lowest ordinal that answers.
func (d *decider) freeChoice(s int) *Node {
	var first, feeding *Node
	for _, n := range d.v.shard(s) {
		if !usable(n) {
			continue
		}
		if len(n.Valkey.Slots) > 0 {
			return n
		}
		if servesReplicas(n) && feeding == nil {
			feeding = n
		}
		if first == nil {
			first = n
		}
	}
	if feeding != nil {
		return feeding
	}
	return first
}

// unseenVolumes lists the nodes of shard s whose volume is older than the cluster and that do
// not answer yet (or are loading): with persistence they may hold the shard's newest data.
func (d *decider) unseenVolumes(s int) []*Node {
	if !d.v.spec.Persistence {
		return nil
	}
	var out []*Node
	for _, n := range d.v.shard(s) {
		if n.Pod.VolumeFromBefore && !usable(n) {
			out = append(out, n)
		}
	}
	return out
}

// pendingClaims names the pods of shard s whose claims a first bootstrap starts (keptPods) that
// do not exist yet: an election before they answer would pass over their data (found by a
// review: the extra pods refused by a quota, or not seen yet, while the others answered). A
// wake waits for its own pods instead (wakeWaits): claims older than the cluster beyond them
// were started by its first bootstrap or scaled away since.
func (d *decider) pendingClaims(s int) []string {
	if d.p.Op.Hibernation.Wake || d.keptPods(d.p) == 0 || d.v.spec.BootstrapFrom != "" {
		return nil
	}
	var out []string
	for _, c := range d.claimsBeyond(s) {
		out = append(out, c.Name)
	}
	return out
}

// silentSlotServers names, in cluster mode, the nodes of shard s that do not answer while the
// answering nodes' views show slots served by a node ID none of them has. A bootstrap moves
// slots with their keys to a shard's first node (from kept claims, towards the slot plan); that
// node, restarting, may be the one serving them: a free choice of another node would promote
// it over the keys, and the first node, back, would follow it and sync its keys away. The
// choice waits for it. (A node ID no pod answers as once every pod answers is a ghost, which
// the bootstrap forgets.)
func (d *decider) silentSlotServers(s int) []*Node {
	if d.v.spec.Mode != ModeCluster {
		return nil
	}
	var silent []*Node
	for _, n := range d.v.shard(s) {
		if !usable(n) {
			silent = append(silent, n)
		}
	}
	if len(silent) == 0 {
		return nil
	}
	answering := map[string]bool{}
	for i := range d.obs.Nodes {
		if n := &d.obs.Nodes[i]; usable(n) && n.Valkey.NodeID != "" {
			answering[n.Valkey.NodeID] = true
		}
	}
	for i := range d.obs.Nodes {
		n := &d.obs.Nodes[i]
		if !usable(n) {
			continue
		}
		for _, k := range n.Valkey.Known {
			if k.Slots > 0 && !answering[k.ID] {
				return silent
			}
		}
	}
	return nil
}

// holdingKeys lists the nodes of shard s that answer and hold keys. Client writes are fenced
// until Steady, so a node holds keys at bootstrap only when it started from a volume that
// held them, or synced from such a node.
func (d *decider) holdingKeys(s int) []*Node {
	var out []*Node
	for _, n := range d.v.shard(s) {
		if usable(n) && n.Valkey.Keys > 0 {
			out = append(out, n)
		}
	}
	return out
}

func guardBootstrapElected(d *decider) (outcome, bool) {
	for s := 0; s < d.bootShards(d.p); s++ {
		if d.firstNode(d.p, s) != nil {
			continue
		}
		c, why, _ := d.bootstrapElection(s)
		if c == nil {
			continue
		}
		next := d.p.Clone()
		prev, had := elected(d.p, s)
		next.Shards = recordPrimary(next.Shards, s, c)
		if had {
			why.Instead = prev.Primary
		}
		return outcome{next: next, why: why}, true
	}
	return outcome{}, false
}

// bootstrapElection chooses shard s's first node when nodes hold data: the node the user
// named, or the one whose data contains every other node's. It says why (the history's
// reason) or, when it cannot choose, why not.
func (d *decider) bootstrapElection(s int) (*Node, Reason, Wait) {
	if name := d.v.spec.BootstrapFrom; name != "" {
		n := d.v.node(name)
		if n == nil {
			return nil, Reason{}, Wait{Kind: WaitBootstrapElection, Shard: s, Detail: fmt.Sprintf("shard %d: the annotation valkey.fsm.dev/bootstrap-from names %s, which is not a pod of this cluster", s, name)}
		}
		if n.Shard != s {
			return nil, Reason{}, Wait{}
		}
		if !usable(n) {
			return nil, Reason{}, Wait{Kind: WaitBootstrapElection, Shard: s, Detail: fmt.Sprintf("shard %d: %s, named by the user to bootstrap from, does not answer", s, name)}
		}
		var lost []string
		for _, o := range d.v.shard(s) {
			if o != n && (o.Valkey.Keys > 0 || o.Pod.VolumeFromBefore && !usable(o)) {
				lost = append(lost, describeData(o))
			}
		}
		return n, Reason{Kind: ReasonBootstrapChosen, Shard: s, Node: n.Name, Keys: n.Valkey.Keys, Others: strings.Join(lost, ", ")}, Wait{}
	}
	if why := d.wakeWaits(d.p, s); why != "" {
		return nil, Reason{}, Wait{Kind: WaitBootstrapElection, Shard: s, Detail: why}
	}
	if open := d.openWriters(s); len(open) > 0 {
		return nil, Reason{}, Wait{Kind: WaitBootstrapElection, Shard: s, Detail: fmt.Sprintf("shard %d: %s still accept(s) client writes (its pod did not stop since the cluster last served): closing them before the election, so that no write lands after it", s, names(open))}
	}
	if unseen := d.unseenVolumes(s); len(unseen) > 0 {
		return nil, Reason{}, Wait{Kind: WaitBootstrapElection, Shard: s, Detail: fmt.Sprintf("shard %d: %s kept a volume from before this cluster and do(es) not answer yet: it may hold the newest data (to go on without it, name the pod whose data wins in the annotation valkey.fsm.dev/bootstrap-from)", s, names(unseen))}
	}
	if silent := d.silentSlotServers(s); len(silent) > 0 {
		return nil, Reason{}, Wait{Kind: WaitBootstrapElection, Shard: s, Detail: fmt.Sprintf("shard %d: %s do(es) not answer yet, and slots are served by a node no answering pod is: it may hold keys the bootstrap moved to the shard, which another node chosen now would sync away (to go on without it, name the pod to start the shard from in the annotation valkey.fsm.dev/bootstrap-from)", s, names(silent))}
	}
	if pending := d.pendingClaims(s); len(pending) > 0 {
		if !d.v.spec.Persistence {
			// Cluster mode keeps nodes.conf without persistence (keptPods): no data, an identity.
			return nil, Reason{}, Wait{Kind: WaitBootstrapElection, Shard: s, Detail: fmt.Sprintf("shard %d: the claims of %s were kept from before this cluster and their pods do not run yet: they hold no data, but the other nodes know their node IDs, so their pods start before the bootstrap goes on (rather than their IDs being forgotten as gone)", s, strings.Join(pending, ", "))}
		}
		return nil, Reason{}, Wait{Kind: WaitBootstrapElection, Shard: s, Detail: fmt.Sprintf("shard %d: the claims of %s, beyond the spec, were kept from before this cluster and their pods do not run yet: they may hold the newest data (to go on without them, name the pod whose data wins in the annotation valkey.fsm.dev/bootstrap-from)", s, strings.Join(pending, ", "))}
	}
	holders := d.holdingKeys(s)
	if len(holders) == 0 {
		// Nothing to elect; but if a node was elected for its data and no node holds data
		// any more (it restarted empty, and nothing synced from it), the shard starts anew
		// from a free choice, and the history says the data is gone.
		if rec, ok := elected(d.p, s); ok {
			if c := d.freeChoice(s); c != nil {
				return c, Reason{Kind: ReasonBootstrapDataLost, Shard: s, Node: c.Name, Peer: rec.Primary}, Wait{}
			}
		}
		return nil, Reason{}, Wait{}
	}
	if c, ok := d.wakeSource(s); ok {
		return c, Reason{Kind: ReasonBootstrapWoken, Shard: s, Node: c.Name, Keys: c.Valkey.Keys, Others: d.othersData(s, c)}, Wait{}
	}
	if c, same, byKeys, ok := d.containsAll(s, holders); ok {
		why := Reason{Kind: ReasonBootstrapElected, Shard: s, Node: c.Name, Keys: c.Valkey.Keys, Others: d.othersData(s, c)}
		if len(same) > 0 {
			why.Same = names(same)
		}
		if len(byKeys) > 0 {
			why.OverByKeys = names(byKeys)
		}
		if from := d.p.Op.Hibernation.wakeFrom(s); d.p.Op.Hibernation.Wake && from != "" && from != c.Name {
			why.Empty = from
		}
		return c, why, Wait{}
	}
	if tied := differentDataTied(holders); len(tied) > 0 {
		return nil, Reason{}, Wait{Kind: WaitDataChoice, Shard: s, Detail: fmt.Sprintf("shard %d: %s hold as many keys each but different data (their data digests differ): neither contains the other's, and electing one would discard the other's writes (name the pod whose data wins in the annotation valkey.fsm.dev/bootstrap-from)", s, describeAll(tied))}
	}
	return nil, Reason{}, Wait{Kind: WaitDataChoice, Shard: s, Detail: fmt.Sprintf("shard %d: the nodes' data forked (%s%s): none holds all the others' (name the pod whose data wins in the annotation valkey.fsm.dev/bootstrap-from)", s, describeAll(holders), keysForked(holders))}
}

// wakeSource is, for a waking shard, the node recorded to wake from when it answers and holds
// data: it was the primary when the pods stopped, with client writes closed and every replica
// that followed it caught up, so its data contains every other node's even where key counts
// say otherwise (a replica not linked at the stop; writes of users close-writes does not close;
// deletes). Without it (none recorded, or it holds nothing: its volume was lost) the shard is
// elected by its nodes' data.
func (d *decider) wakeSource(s int) (*Node, bool) {
	name := d.p.Op.Hibernation.wakeFrom(s)
	if !d.p.Op.Hibernation.Wake || name == "" {
		return nil, false
	}
	n := d.v.node(name)
	if n == nil || n.Shard != s || !usable(n) || n.Valkey.Keys == 0 {
		return nil, false
	}
	return n, true
}

// othersData describes what the other nodes of shard s hold, all of which will sync from the
// elected node c ("" when there are none).
func (d *decider) othersData(s int, c *Node) string {
	var others []string
	for _, o := range d.v.shard(s) {
		if o != c {
			others = append(others, describeData(o))
		}
	}
	return strings.Join(others, ", ")
}

// describeData says what a node holds, for messages.
func describeData(n *Node) string {
	switch {
	case !usable(n):
		return n.Name + " not answering"
	case n.Valkey.Keys == 0:
		return n.Name + " empty"
	default:
		return fmt.Sprintf("%s %d keys", n.Name, n.Valkey.Keys)
	}
}

func describeAll(nodes []*Node) string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = describeData(n)
	}
	return strings.Join(out, ", ")
}

// shardWired reports whether shard s has all its pods (objectPods, none beyond), the first
// node serving and every other node following it with the link up (and, in cluster mode,
// every node joined).
func (d *decider) shardWired(s int, first *Node) bool {
	pods := d.objectPods(d.p)
	var nodes []*Node
	for _, n := range d.v.shard(s) {
		switch {
		case n.Ordinal < pods:
			nodes = append(nodes, n)
		case n.Pod.Exists:
			return false
		}
	}
	if len(nodes) != pods || !servesReplicas(first) || first.Ordinal >= pods {
		return false
	}
	for _, n := range nodes {
		if !usable(n) {
			return false
		}
		if d.v.spec.Mode == ModeCluster && !d.v.joined(n) {
			return false
		}
		if n != first && (!follows(n, first) || !n.Valkey.LinkUp) {
			return false
		}
	}
	return true
}

func (d *decider) bootstrapActions(p Persisted, b *actionList) {
	spec := d.v.spec
	shards := d.bootShards(p)
	d.ensureObjects(p, shards, b)
	for s := 0; s < shards; s++ {
		d.bootstrapShard(p, s, b)
	}
	if spec.Mode == ModeCluster {
		// A cluster adopted from kept claims remembers the old IDs of pods whose claims were
		// lost.
		d.forgetGhosts(p, false, b)
	}
	if r := d.restoreAtBootstrap(); r != nil && r.Pending != "" && len(b.actions) == 0 {
		b.wait(Wait{Kind: WaitRestoreAtBootstrap, ID: r.ID, Detail: r.Pending})
	}
	if spec.Mode != ModeCluster || len(b.actions) > 0 {
		return
	}
	// Slots, one step at a time, towards the plan: nothing has been written yet, but the
	// spec may have changed the shard count since a first assignment.
	if moves := d.slotMoves(Persisted{}, shards); len(moves) > 0 {
		m := moves[0]
		to := d.firstNode(p, m.to)
		var from *Node
		if m.from >= 0 {
			from = d.firstNode(p, m.from)
		}
		if from == nil && m.from >= shards {
			from = d.leavingSlotServer(m.from)
		}
		switch {
		case to == nil:
			b.wait(Wait{Kind: WaitNoNodeAnswers, Shard: m.to})
		case from == nil:
			b.add(AssignSlots{Target: TargetOf(m.to, to), Slots: []SlotRange{m.SlotRange}})
		default:
			d.migrate(m.from, m.to, from, to, m.SlotRange, b)
		}
		return
	}
	if behind := d.slotMapBehind(); len(behind) > 0 {
		b.wait(Wait{Kind: WaitSlotMapBehind, Detail: strings.Join(behind, ", ")})
	}
}

// slotMapBehind lists the nodes that answer and do not see every slot served yet, with how
// many they see, or that do not serve yet (cluster_state fail: a primary waits 2 s after it
// starts, and clients get CLUSTERDOWN meanwhile).
func (d *decider) slotMapBehind() []string {
	var out []string
	for _, n := range d.v.nodes {
		switch {
		case !usable(n):
		case n.Valkey.SlotsSeen < NumSlots:
			out = append(out, fmt.Sprintf("%s (sees %d of %d slots)", n.Name, n.Valkey.SlotsSeen, NumSlots))
		case !n.Valkey.ClusterOK:
			out = append(out, fmt.Sprintf("%s (cluster_state fail)", n.Name))
		}
	}
	return out
}

// bootstrapShard wires shard s to its first node.
func (d *decider) bootstrapShard(p Persisted, s int, b *actionList) {
	first := d.firstNode(p, s)
	if first == nil {
		for _, n := range d.openWriters(s) {
			b.add(CloseWrites{Target: TargetOf(s, n)})
		}
		if _, _, why := d.bootstrapElection(s); !why.IsZero() {
			b.wait(why)
		} else if rec, ok := elected(p, s); ok {
			b.wait(Wait{Kind: WaitElectedNotAsElected, Shard: s, Node: rec.Primary})
		} else if why := d.notStarting(s); why != "" {
			b.wait(Wait{Kind: WaitNoNodeAnswersBecause, Shard: s, Detail: why})
		} else {
			b.wait(Wait{Kind: WaitNoNodeAnswersYet, Shard: s})
		}
		return
	}
	d.wireShard(s, first, b)
}

// wireShard promotes a shard's first node and makes the others follow it (and, in cluster
// mode, join).
func (d *decider) wireShard(s int, first *Node, b *actionList) {
	if !servesReplicas(first) {
		b.add(Promote{Target: TargetOf(s, first)})
	}
	for _, n := range d.v.shard(s) {
		if n == first || !usable(n) {
			continue
		}
		// A node that still serves slots (a claim kept in nodes.conf across a re-creation)
		// cannot be made a replica (CLUSTER REPLICATE refuses it): it is settled as a stray
		// of the shard (found by the simulator: regressions/cluster-bootstrap-stray-serves-slots.sched,
		// where the bootstrap asked replica-of for good).
		if d.v.spec.Mode == ModeCluster && len(n.Valkey.Slots) > 0 && n.Valkey.Role == RolePrimary {
			d.strayOwner(s, d.outweighedAtBootstrap(s, first, n), n, first, b)
			continue
		}
		// A replica sealed before the pods stopped (a hibernation asked for while its primary
		// did not answer, then a wake before the pods stopped) cannot authenticate: the seal
		// has done its part once the shard's first node is chosen, as in Steady.
		if !n.Valkey.Sealed.At.IsZero() {
			b.add(Unseal{Target: TargetOf(s, n)})
		}
		if n.Valkey.Role == RolePrimary || !follows(n, first) {
			b.add(d.replicaOf(s, n, first))
		}
	}
	if d.v.spec.Mode != ModeCluster {
		return
	}
	for _, n := range d.v.shard(s) {
		if usable(n) && !d.v.joined(n) {
			b.add(AddNode{Target: TargetOf(s, n)})
		}
	}
}

// notStarting says which nodes of shard s do not start, and why.
func (d *decider) notStarting(s int) string {
	var nodes []Node
	for _, n := range d.v.shard(s) {
		nodes = append(nodes, *n)
	}
	return NotStarting(nodes)
}
