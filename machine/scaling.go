package machine

import (
	"fmt"
	"strings"
)

// Scaling changes the number of pods per shard (1 + Spec.Replicas). The count the machine
// works towards is part of its record (Persisted.PodsPerShard) and changes only by a
// transition, replicas-changed, so that every change shows in the history. Scaling up, the
// objects ask for the new pods at once and Steady makes them follow their primary. Scaling
// down, a StatefulSet removes the highest ordinals: the objects ask for fewer pods only in
// Steady, once every shard's recorded primary answers on an ordinal that stays and the nodes
// that stay follow it (see scaleDownBlocked). A primary on a removed
// ordinal is first handed over (scale-down-hand-over, a planned hand-over in FailingOver with
// the switchover's rules: recorded before FAILOVER TO is sent, only to a caught-up replica,
// aborted by switchover-stale or spec-changed only while it cannot have happened,
// pre-empted by primary-lost) to the most advanced replica on an ordinal that stays. Nodes on
// removed ordinals are never hand-over targets, and a failover elects one only when no
// node on an ordinal that stays holds all the data (it then hands over in turn).

// specPods is the number of pods per shard the spec asks for.
func (d *decider) specPods() int { return 1 + d.v.spec.Replicas }

// targetPods is the number of pods per shard the machine works towards: the spec's while
// bootstrapping (nothing is recorded yet); otherwise the recorded PodsPerShard, or, for a
// state persisted before the machine recorded it, what the objects ask for (the spec's when
// there are no objects).
func (d *decider) targetPods(p Persisted) int {
	switch {
	case p.State == Bootstrapping:
		return d.specPods()
	case p.PodsPerShard > 0:
		return p.PodsPerShard
	case d.obs.Objects.Shards > 0:
		return max(1, 1+d.obs.Objects.Replicas)
	default:
		return d.specPods()
	}
}

// objectPods is the number of pods per shard the owned objects must ask for now: the target,
// except that a scale-down is carried out only in Steady, and waits, with the objects as
// they are, while scaleDownBlocked.
func (d *decider) objectPods(p Persisted) int {
	target := max(d.targetPods(p), d.keptPods(p))
	if d.obs.Objects.Shards == 0 {
		return target
	}
	cur := max(1, 1+d.obs.Objects.Replicas)
	if target >= cur {
		return target
	}
	if p.State == Bootstrapping && d.v.spec.BootstrapFrom != "" && !p.Op.Hibernation.Wake {
		return target // the user named the data that wins: the pods beyond hold none of it
	}
	if p.State != Steady {
		return cur
	}
	if _, blocked := d.scaleDownBlocked(p, target); blocked {
		return cur
	}
	return target
}

// keptPods is how many pods per shard a bootstrap on kept claims starts to bring up every claim
// that may hold data (0: none beyond the spec's pods). A cluster re-created smaller than the
// one deleted keeps the claims of the ordinals it no longer asks for, and they may hold the
// newest data (a write acknowledged by WAIT on two replicas, both beyond the new count). Left
// unstarted, the bootstrap elects among the others and the write is lost; started, the
// election weighs them like every kept volume, and once Steady the scale-down to the spec's
// count hands the primary over to an ordinal that stays
// (sim/testdata/regressions/recreate-past-claims-beyond-the-spec.sched). A wake starts the
// pods the shards ran when they stopped (wokenPods). When the user named the pod to bootstrap
// from (the others' data is discarded), only that pod must run: a pod beyond the spec that
// cannot start (its volume on a lost node) must not hold the bootstrap once the user decided.
// In cluster mode the claims are started without persistence too: they hold no data, but
// nodes.conf, so the pod started on one is the node its ID names in the others' views. Left
// unstarted, that ID looks like a ghost and the bootstrap forgets it, while kubectl scale or a
// scale-up can start that very node again before the forget runs
// (sim/testdata/regressions/cluster-scaled-during-bootstrap-forgets-a-live-node.sched).
func (d *decider) keptPods(p Persisted) int {
	if p.State != Bootstrapping || !d.v.spec.Persistence && d.v.spec.Mode != ModeCluster {
		return 0
	}
	if name := d.v.spec.BootstrapFrom; name != "" {
		if n := d.v.node(name); n != nil {
			return n.Ordinal + 1
		}
		return 0
	}
	if p.Op.Hibernation.Wake {
		return d.wokenPods(p)
	}
	pods := 0
	for _, c := range d.claimsBeyond(-1) {
		pods = max(pods, c.Ordinal+1)
	}
	return pods
}

// claimsBeyond lists the claims kept from before the cluster beyond the spec's pods of shard s
// (every shard the bootstrap wires: -1) that have no pod yet.
func (d *decider) claimsBeyond(s int) []Claim {
	var out []Claim
	shards := d.bootShards(d.p)
	for _, c := range d.obs.ClaimsBeyond {
		if c.Shard < shards && (s < 0 || c.Shard == s) {
			out = append(out, c)
		}
	}
	return out
}

// scaleDownBlocked says why the objects may not shrink to target pods per shard yet: a
// shard's recorded primary is on an ordinal the shrink removes, or it does not answer as the
// recorded primary (it may be lost, and the replicas being removed may hold the newest
// writes a failover needs), or a node that stays does not follow it yet; in cluster mode, a
// node being removed is still a member of the cluster bus (it leaves it first, or the other
// nodes would keep it as a failed node).
func (d *decider) scaleDownBlocked(p Persisted, target int) (string, bool) {
	if why, blocked := d.shardsBlockScaleDown(p, target); blocked {
		return why, true
	}
	if leaving := d.leavingBus(p, target); len(leaving) > 0 {
		return fmt.Sprintf("scale-down to %d pod(s) per shard waits: %s leave the cluster bus first", target, names(leaving)), true
	}
	return "", false
}

// leavingBus lists, in cluster mode, the reachable nodes on ordinals a scale-down to target
// pods removes that are still joined.
func (d *decider) leavingBus(p Persisted, target int) []*Node {
	if d.v.spec.Mode != ModeCluster {
		return nil
	}
	var out []*Node
	for s := range p.Shards {
		for _, n := range d.v.shard(s) {
			if n.Ordinal >= target && n.Reachable && n.Valkey.Joined {
				out = append(out, n)
			}
		}
	}
	return out
}

// leaving reports whether n is on an ordinal a scale-down removes while the shards allow it,
// in Steady (the only state that shrinks): it leaves the cluster bus rather than joining it.
func (d *decider) leaving(p Persisted, n *Node) bool {
	if p.State != Steady || d.v.spec.Mode != ModeCluster || !d.removed(p, n) {
		return false
	}
	_, blocked := d.shardsBlockScaleDown(p, d.targetPods(p))
	return !blocked
}

// offTheBus reports whether n, on an ordinal a scale-down removes, has left the cluster bus
// (remove-node: the other nodes forgot it and it reset itself): an empty primary without slots
// that belongs to no cluster, which only waits for its pod to go.
func (d *decider) offTheBus(p Persisted, n *Node) bool {
	return d.v.spec.Mode == ModeCluster && d.removed(p, n) && n.Reachable && !n.Valkey.Joined &&
		len(n.Valkey.Slots) == 0 && n.Valkey.Keys == 0
}

// shardsBlockScaleDown is the part of scaleDownBlocked about the shards: each recorded
// primary answers as the recorded process on an ordinal that stays, every answering node on
// an ordinal that stays follows it with the link up (so that the pods removed are never the
// only replicas the primary has), no answering node being removed is a primary (a stray
// master is fenced and demoted first), the replicas that stay hold what the removed ones hold
// (removedCopiesKept), and, outside cluster mode, no answering node being removed follows
// anything (it is detached first: see detachedForRemoval).
func (d *decider) shardsBlockScaleDown(p Persisted, target int) (string, bool) {
	return d.shardsBlock(p, target, true)
}

// shardsBlock is shardsBlockScaleDown (full), or only its checks of the shards' shape (not
// full: the removed nodes' copies and detachment are not looked at).
func (d *decider) shardsBlock(p Persisted, target int, full bool) (string, bool) {
	for s := range p.Shards {
		rec := p.Shards[s]
		prim := d.v.node(rec.Primary)
		switch {
		case !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary:
			return fmt.Sprintf("scale-down to %d pod(s) per shard waits: shard %d: primary %s not answering", target, s, rec.Primary), true
		case prim.Ordinal >= target:
			return fmt.Sprintf("scale-down to %d pod(s) per shard waits: shard %d: primary %s is on a removed ordinal and hands over first", target, s, rec.Primary), true
		case prim.Pod.Terminating:
			// Its process answers until the pod stops, and may come back without its data:
			// the pods a shrink removes may then hold the only copies of its writes.
			return fmt.Sprintf("scale-down to %d pod(s) per shard waits: shard %d: primary %s's pod is being deleted; the pods being removed may hold the only other copies of its data", target, s, rec.Primary), true
		}
		for _, n := range d.v.shard(s) {
			switch {
			case n == prim || !usable(n):
			case n.Ordinal < target && (!follows(n, prim) || !n.Valkey.LinkUp):
				return fmt.Sprintf("scale-down to %d pod(s) per shard waits: shard %d: %s does not follow %s yet", target, s, n.Name, prim.Name), true
			case n.Ordinal >= target && n.Valkey.Role == RolePrimary && !d.offTheBus(p, n):
				return fmt.Sprintf("scale-down to %d pod(s) per shard waits: shard %d: %s answers as a primary", target, s, n.Name), true
			}
		}
		if !full {
			continue
		}
		if why, ok := d.removedCopiesKept(s, rec, prim, target); !ok {
			return fmt.Sprintf("scale-down to %d pod(s) per shard waits: %s", target, why), true
		}
		if following := d.followingForRemoval(s, target); len(following) > 0 {
			return fmt.Sprintf("scale-down to %d pod(s) per shard waits: shard %d: %s, being removed, stop(s) following %s first, so as to acknowledge no write the replicas that stay may lack", target, s, names(following), prim.Name), true
		}
	}
	return "", false
}

// followingForRemoval lists, outside cluster mode, the answering nodes of shard s on ordinals a
// scale-down to target removes that still follow a primary. Such a node acknowledges writes
// until its pod stops: one acknowledged by WAIT on it alone, between the check that the
// replicas that stay hold what it holds and the pod's end, would be left on the primary only
// (found by a review). Detached first (Detach: it follows nothing, keeps its data, acknowledges
// nothing more), what it holds is fixed, and removedCopiesKept checks that. In cluster mode a
// node leaves the cluster bus instead, which empties it (RemoveNode); a node that does not
// answer cannot be detached, and removedCopiesKept asks the replicas that stay to hold all of
// the primary's data then, which still leaves a write acknowledged by it after that check.
func (d *decider) followingForRemoval(s, target int) []*Node {
	if d.v.spec.Mode == ModeCluster {
		return nil
	}
	var out []*Node
	for _, n := range d.v.shard(s) {
		if n.Ordinal >= target && usable(n) && n.Valkey.Role == RoleReplica && n.Valkey.PrimaryHost != "" {
			out = append(out, n)
		}
	}
	return out
}

// detachedForRemoval reports whether n, in Steady, is on an ordinal a scale-down removes and
// follows nothing in a history of the shard's line (as Detach leaves it), while the shards'
// shape allows the scale-down (what may still hold it: the replicas that stay catching up with
// what the removed ones hold, their detachment): it waits for its pod to go, and Steady does
// not point it at the primary again (it would acknowledge writes again, and be detached
// again). A removed node whose history the line does not hold (restarted from its append-only
// file: a fresh ID, its data unmeasured) is pointed at the primary as before: no replica that
// stays can be shown to hold what it holds, and the scale-down would wait for good (found by
// the simulator: regressions/scale-down-of-a-node-back-from-its-file.sched).
//
// Once the objects ask for no more pods than the target (the shrink is decided, the pod only
// waits for its stop), a removed node is never pointed at the primary again, whatever the
// shards' shape: it would acknowledge writes until it stops (found by a review).
func (d *decider) detachedForRemoval(p Persisted, n *Node) bool {
	if p.State != Steady || d.v.spec.Mode == ModeCluster || !d.removed(p, n) || n.Valkey.Role != RoleReplica || n.Valkey.PrimaryHost != "" {
		return false
	}
	target := d.targetPods(p)
	if d.obs.Objects.Shards > 0 && 1+d.obs.Objects.Replicas <= target {
		return true
	}
	if !d.inALineHistory(p, n) {
		return false
	}
	_, blocked := d.shardsBlock(p, target, false)
	return !blocked
}

// inALineHistory reports whether n's history is one of the shard's line: Detach keeps it,
// so a node detached from it is held detached (detachedForRemoval), and only a node that
// follows the primary in it is detached (toDetachForRemoval). Narrower than onTheLine on
// purpose: a node still in a history the line left behind (or empty) may be in the middle of a
// full sync from the primary, and detaching it then would stop the sync for good.
func (d *decider) inALineHistory(p Persisted, n *Node) bool {
	return n.Shard < len(p.Shards) && d.lineage(n.Shard, p.Shards[n.Shard].History).has(n.Valkey.ReplID)
}

// toDetachForRemoval lists the nodes of shard s that followingForRemoval lists and that are to
// be detached now: those that follow the recorded primary in a history of the line. One that
// follows another address is pointed at the primary first (converge), and one still in another
// history (a full sync under way, after a restart from its append-only file) finishes its sync
// first: detached then, it would keep its own history, which Steady would point at the primary
// again, and the two would alternate for good, the sync never done (found by a review).
func (d *decider) toDetachForRemoval(p Persisted, s, target int) []*Node {
	prim := d.v.node(p.Shards[s].Primary)
	var out []*Node
	for _, n := range d.followingForRemoval(s, target) {
		if prim != nil && follows(n, prim) && d.inALineHistory(p, n) {
			out = append(out, n)
		}
	}
	return out
}

// removedCopiesKept reports whether, in shard s, every write a node being removed holds is
// also held by as many replicas that stay as WAIT asks for (MinSyncReplicas, at most as many
// as stay): a WAIT-acknowledged write may be on the removed replicas only, while the ones
// that stay lag, and the removal (its claim goes with it) would leave it on the primary alone,
// lost with it (found by a review; the simulator had counted the removal as a fault that
// voided the write's guarantee). If not, it says which node the replicas that stay lack.
func (d *decider) removedCopiesKept(s int, rec ShardRecord, prim *Node, target int) (string, bool) {
	l := d.lineage(s, rec.History)
	var staying []*Node
	for _, n := range d.v.shard(s) {
		if n != prim && usable(n) && n.Ordinal < target && follows(n, prim) && n.Valkey.LinkUp {
			staying = append(staying, n)
		}
	}
	// As many as WAIT asks for, at most as many replicas as the target keeps (the primary is
	// on an ordinal that stays): counted against the ordinals that stay, not the replicas
	// following now, or a scale-down with no replica following yet (a deposed one awaiting its
	// resync) would need none and drop the only copy (found by the simulator).
	need := min(max(d.v.spec.MinSyncReplicas, 1), target-1)
	for _, r := range d.v.shard(s) {
		if r.Ordinal < target || !r.Pod.Exists {
			continue
		}
		// A pod being removed that does not answer may hold anything the primary sent it:
		// the replicas that stay must hold all of the primary's data (found by the simulator
		// with the operator cut off from the removed replica). A deposed pod off the line
		// follows nothing and takes no write: what it holds beyond its mark is off the line
		// by the election's decision, only the line up to the mark counts (one back on the
		// line, resynced while the operator could not see it, counts as any replica: it may
		// have acknowledged writes the others lack; found by the simulator).
		holds, what := r.Valkey, fmt.Sprintf("holds writes (offset %d)", r.Valkey.Offset)
		if m, deposed := rec.deposedOf(r.Name); deposed && usable(r) && !d.onTheLine(s, rec, r) {
			holds, what = Valkey{ReplID: m.Left.ID, Offset: m.Left.End - 1}, fmt.Sprintf("deposed, holds the line up to offset %d", m.Left.End-1)
			if m.Left.ID == "" {
				continue
			}
		} else if !usable(r) {
			holds, what = prim.Valkey, fmt.Sprintf("does not answer and may hold any write of %s (offset %d)", prim.Name, prim.Valkey.Offset)
		}
		if holds.empty() {
			continue
		}
		held := 0
		for _, n := range staying {
			if l.covers(n.Valkey, holds) {
				held++
			}
		}
		if held < need {
			return fmt.Sprintf("shard %d: %s, being removed, %s that only %d of the replicas that stay hold yet, %d needed (WAIT may have acknowledged them); waiting for them to catch up", s, r.Name, what, held, need), false
		}
	}
	return "", true
}

// handOverWaits reports whether a recorded primary is on an ordinal a scale-down to target
// pods removes (it hands over before the scale-down goes on).
func (d *decider) handOverWaits(p Persisted, target int) bool {
	for s := range p.Shards {
		if prim := d.v.node(p.Shards[s].Primary); prim != nil && prim.Ordinal >= target {
			return true
		}
	}
	return false
}

// scaleDownHandOverWaits says why a converged cluster's primary on an ordinal the scale-down to
// target removes is not handed over ("" when nothing stands in the way the scale's own wait
// does not say): in the Sentinel topology the hand-over needs the sentinels ready for it.
func (d *decider) scaleDownHandOverWaits(p Persisted, target int) string {
	for s, rec := range p.Shards {
		prim := d.v.node(rec.Primary)
		if prim == nil || prim.Ordinal < target {
			continue
		}
		if t := d.handOverTarget(p, s); t != nil {
			if why := d.sentinelHandOverBlocked(p, s, t); why != "" {
				return fmt.Sprintf("shard %d: the sentinels are not ready for a hand-over to %s: %s", s, t.Name, why)
			}
		}
	}
	return ""
}

// scaling reports whether a recorded scale-down waits (the objects still ask for more pods
// than the target). Other planned operations wait for it.
func (d *decider) scaling(p Persisted) bool {
	return d.objectPods(p) != d.targetPods(p)
}

// removed reports whether n's ordinal is beyond the pods per shard the machine works towards.
func (d *decider) removed(p Persisted, n *Node) bool {
	return n.Ordinal >= d.targetPods(p)
}

// guardReplicasChanged records the spec's pod count when it differs from the record's.
func guardReplicasChanged(d *decider) (outcome, bool) {
	p := d.p
	want, was := d.specPods(), d.targetPods(p)
	if want == was {
		return outcome{}, false
	}
	next := p
	next.PodsPerShard = want
	why := Reason{Kind: ReasonScaleDown, Pods: want, PodsWere: was}
	if want > was {
		cur := 0
		if d.obs.Objects.Shards > 0 {
			cur = 1 + d.obs.Objects.Replicas
		}
		why.Kind = ReasonScaleUp
		if cur > was {
			why.Kind, why.PodsKept = ReasonScaleUpKeeping, cur
		}
		return outcome{next: next, why: why}, true
	}
	// The primaries on the ordinals removed, by shard ("-": it stays): each hands over first.
	removed, some := make([]string, len(p.Shards)), false
	for s := range p.Shards {
		removed[s] = "-"
		if prim := d.v.node(p.Shards[s].Primary); prim != nil && prim.Ordinal >= want {
			removed[s], some = prim.Name, true
		}
	}
	if some {
		why.Primaries = strings.Join(removed, " ")
	}
	return outcome{next: next, why: why}, true
}

// ordinals names the ordinals from lo (inclusive) to hi (exclusive).
func ordinals(lo, hi int) string {
	if hi-lo == 1 {
		return fmt.Sprintf("ordinal %d", lo)
	}
	return fmt.Sprintf("ordinals %d-%d", lo, hi-1)
}

// guardScaleDownHandOver starts the hand-over of a primary on an ordinal a recorded
// scale-down removes, from a converged cluster, to the most advanced caught-up replica on an
// ordinal that stays. It is recorded before FAILOVER TO is asked for, as a switchover is.
func guardScaleDownHandOver(d *decider) (outcome, bool) {
	p := d.p
	target := d.targetPods(p)
	if d.obs.Objects.Shards == 0 || target >= 1+d.obs.Objects.Replicas {
		return outcome{}, false
	}
	if ok, _ := d.converged(p); !ok {
		return outcome{}, false
	}
	for s := range p.Shards {
		rec := p.Shards[s]
		prim := d.v.node(rec.Primary)
		if prim == nil || prim.Ordinal < target {
			continue
		}
		t := d.handOverTarget(p, s)
		if t == nil || d.sentinelHandOverBlocked(p, s, t) != "" {
			continue
		}
		next := p
		next.Op = Operation{
			Election:   Election{Shard: s, Lost: rec.Primary, LostRunID: rec.RunID, LostHistory: rec.History, Planned: true},
			Switchover: SwitchoverGoal{To: t.Name, Pods: target},
			HandOver:   HandOverMark{Shard: s, To: t.Name},
		}
		return outcome{next: next, why: Reason{Kind: ReasonHandOverStarted, Shard: s, Goal: GoalScaleDown, Node: rec.Primary, Peer: t.Name, Pods: target}}, true
	}
	return outcome{}, false
}

// expandVolumes asks for every data volume smaller than the spec's storage size to grow. It
// is not a transition: a volume only grows, which changes no node's data or role.
func (d *decider) expandVolumes(b *actionList) {
	want := d.v.spec.StorageBytes
	if want <= 0 {
		return
	}
	var small []string
	for _, n := range d.v.nodes {
		if n.Pod.VolumeBytes > 0 && n.Pod.VolumeBytes < want {
			small = append(small, n.Name)
		}
	}
	if len(small) > 0 {
		b.add(ExpandVolumes{Nodes: small, Bytes: want})
	}
}
