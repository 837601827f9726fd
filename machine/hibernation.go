package machine

import (
	"fmt"
	"strings"
)

// Hibernation stops every pod of a cluster and keeps its data on the claims, for a cluster
// nobody uses for a while (a test environment overnight); waking brings every acknowledged
// write back.
//
//   - hibernate-requested (Steady → Hibernated): the spec asks for it, the nodes persist their
//     data (the Durable profile; a Cache cluster would come back empty, and the API refuses
//     it), every shard's recorded primary serves, and no password rotation is half-way.
//   - Hibernated: each recorded primary is closed to client writes (close-writes; replication
//     goes on), then once every replica that follows it holds all it wrote (its offset),
//     hibernate-caught-up records the node each shard wakes from, and the StatefulSets ask
//     for no pod (ensure-objects stopped: the claims are kept, whenScaled Retain). Valkey
//     saves its data as it shuts down (the append-only file and a snapshot). A primary lost
//     meanwhile is not recorded to wake from (a crash may lose its last second of writes,
//     which its replicas hold): the stop goes on, and the wake elects that shard by its data.
//   - wake-requested (Hibernated → Bootstrapping): the spec no longer asks for it. The cluster
//     bootstraps on its kept claims as a re-created one does (bootstrap.go), starting as many
//     pods per shard, and shards, as ran at the stop even where the spec now asks for fewer
//     (wokenPods, bootShards), and waits for
//     every pod to answer before it chooses a shard's first node: any kept volume may hold the
//     newest data. A shard starts from the node recorded to wake from while it holds data;
//     key counts cannot tell a replica that was not linked at the stop, or that missed writes
//     of users close-writes does not close, from the primary. The shards' records start anew
//     from that choice.

func guardHibernateRequested(d *decider) (outcome, bool) {
	spec := d.v.spec
	if !spec.Hibernate || !spec.Persistence || d.p.Rotation.ID != "" || len(d.p.Shards) == 0 || d.hibernatePending(d.p) != "" {
		return outcome{}, false
	}
	if _, ok := d.primariesServe(d.p); !ok {
		return outcome{}, false
	}
	next := d.p.Clone()
	next.Op = Operation{}
	return outcome{next: next, message: fmt.Sprintf("hibernate requested: client writes close, the replicas catch up, then every pod stops; the claims keep the data of %d shard(s)", len(d.p.Shards))}, true
}

func guardHibernateCancelled(d *decider) (outcome, bool) {
	if d.v.spec.Hibernate || d.obs.Objects.Replicas == StoppedReplicas {
		return outcome{}, false
	}
	if _, ok := d.primariesServe(d.p); !ok {
		return outcome{}, false
	}
	next := d.p.Clone()
	next.Op = Operation{}
	return outcome{next: next, message: "hibernate cancelled before the pods stopped: every recorded primary still serves; writes open again"}, true
}

// guardHibernateCaughtUp records, before the pods are asked to stop, which node each shard
// wakes from: its primary, if it serves as the recorded process (its client writes closed and
// every replica that follows it caught up, its data contains every other node's; Valkey saves
// it as it shuts down). A primary that no longer serves is not recorded ("-"): it may have
// crashed and lost its last second of writes, which its replicas hold. For the same reason a
// recorded node seen restarted before its pod stopped loses its record again.
func guardHibernateCaughtUp(d *decider) (outcome, bool) {
	if !d.v.spec.Hibernate {
		return outcome{}, false
	}
	if d.p.Op.Hibernation.From != "" {
		return d.wakeFromRestarted()
	}
	if !d.caughtUp(d.p, &actionList{}) {
		return outcome{}, false
	}
	from := make([]string, len(d.p.Shards))
	primaries := make([]string, len(d.p.Shards))
	for s, rec := range d.p.Shards {
		from[s], primaries[s] = "-", rec.Primary
		if d.primaryServes(rec) {
			from[s] = rec.Primary
		}
	}
	next := d.p.Clone()
	next.Op.Hibernation.From = strings.Join(from, " ")
	return outcome{next: next, why: Reason{Kind: ReasonHibernateCaughtUp, WakeFrom: next.Op.Hibernation.From, Primaries: strings.Join(primaries, " ")}}, true
}

// wakeFromRestarted drops from the record the nodes seen running as another process than
// the recorded primary's: a crash after the record (a container restarted before the stop
// reached it) may have lost writes that its replicas hold (appendfsync everysec), which a wake
// from it would wipe on them.
func (d *decider) wakeFromRestarted() (outcome, bool) {
	from := strings.Fields(d.p.Op.Hibernation.From)
	dropped := false
	for s, name := range from {
		if name == "-" || s >= len(d.p.Shards) {
			continue
		}
		if n := d.v.node(name); n != nil && n.Reachable && n.Valkey.RunID != d.p.Shards[s].RunID {
			from[s], dropped = "-", true
		}
	}
	if !dropped {
		return outcome{}, false
	}
	next := d.p.Clone()
	next.Op.Hibernation.From = strings.Join(from, " ")
	return outcome{next: next, why: Reason{Kind: ReasonWakeFromRestarted, WakeFrom: next.Op.Hibernation.From, WakeFromWas: d.p.Op.Hibernation.From}}, true
}

// wakeFrom is the node recorded to wake shard s from ("": none).
func (h Hibernation) wakeFrom(s int) string {
	from := strings.Fields(h.From)
	if s >= len(from) || from[s] == "-" {
		return ""
	}
	return from[s]
}

func guardWakeRequested(d *decider) (outcome, bool) {
	if d.v.spec.Hibernate {
		return outcome{}, false
	}
	next := d.p.Clone()
	next.Shards = nil
	next.Op = Operation{Hibernation: Hibernation{Wake: true, From: d.p.Op.Hibernation.From}}
	return outcome{next: next, message: "wake requested: the pods start on their kept claims; once every one answers, each shard starts from the node whose data contains every other's"}, true
}

// hibernateWaits says why hibernate-requested does not fire while the spec asks for it ("":
// it does not ask, or nothing holds it back), for Steady's waiting message.
func (d *decider) hibernateWaits(p Persisted) string {
	spec := d.v.spec
	switch {
	case !spec.Hibernate:
		return ""
	case !spec.Persistence:
		return "hibernate is asked of a cluster that does not persist its data (profile Cache): it would come back empty, so it keeps running"
	case p.Rotation.ID != "":
		return fmt.Sprintf("hibernate waits for the password rotation %s to complete", p.Rotation.ID)
	}
	if why := d.hibernatePending(p); why != "" {
		return "hibernate waits: " + why
	}
	if s, ok := d.primariesServe(p); !ok {
		return fmt.Sprintf("hibernate waits for shard %d's primary %s to serve", s, p.Shards[s].Primary)
	}
	return ""
}

// primariesServe reports whether every shard's recorded primary runs as the recorded process
// and is a primary; if not, the first shard whose primary does not.
func (d *decider) primariesServe(p Persisted) (int, bool) {
	for s, rec := range p.Shards {
		if !d.primaryServes(rec) {
			return s, false
		}
	}
	return 0, true
}

func (d *decider) primaryServes(rec ShardRecord) bool {
	prim := d.v.node(rec.Primary)
	return alive(prim, rec.RunID) && prim.Valkey.Role == RolePrimary
}

// hibernatePending says which change the spec asks for is not carried out yet ("": none): a
// hibernation starts from what the spec asks, so that the wake bootstraps the same shards and
// pods on their claims (a shard count lowered meanwhile would delete a shard's claims).
func (d *decider) hibernatePending(p Persisted) string {
	if d.v.spec.Mode == ModeCluster && d.v.spec.Shards != len(p.Shards) {
		return fmt.Sprintf("the resharding to %d shard(s) first", d.v.spec.Shards)
	}
	if p.PodsPerShard > 0 && d.specPods() != p.PodsPerShard {
		return fmt.Sprintf("the scaling to %d pod(s) per shard first", d.specPods())
	}
	// The objects too: a scale-down recorded but not carried out (the spec lowered during the
	// bootstrap, or kept claims started beyond it) leaves pods the wake will not start, and
	// the primary may be one of them, holding writes the spec's pods lack
	// (regressions/hibernated-before-the-scale-down.sched).
	if o := d.obs.Objects; o.Shards > 0 && o.Replicas != StoppedReplicas && 1+o.Replicas != d.specPods() {
		return fmt.Sprintf("the scaling to %d pod(s) per shard first (the objects still ask for %d)", d.specPods(), 1+o.Replicas)
	}
	return d.deposedPending(p)
}

// hibernateActions: close writes, let the replicas catch up, then stop every pod.
func (d *decider) hibernateActions(p Persisted, b *actionList) {
	objects := d.obs.Objects
	// (A shard beyond the records that has not left the cluster bus stops with the others:
	// leavingShards.)
	if objects.Replicas == StoppedReplicas && objects.Shards >= len(p.Shards) && objects.Revision == d.v.spec.Revision {
		if running := d.runningPods(); len(running) > 0 {
			b.wait(Wait{Kind: WaitHibernatePodsStopping, Detail: strings.Join(running, ", ")})
			return
		}
		b.wait(Wait{Kind: WaitHibernated})
		return
	}
	if d.caughtUp(p, b) {
		if p.Op.Hibernation.From == "" {
			b.wait(Wait{Kind: WaitHibernateRecordWake})
			return
		}
		b.add(EnsureObjects{Shards: d.leavingShards(len(p.Shards), b), Replicas: StoppedReplicas, Revision: d.v.spec.Revision, Sentinels: d.obs.Objects.Sentinels})
	}
}

// caughtUp reports whether every recorded primary that serves is closed to client writes and
// every replica that follows it holds all it wrote; b gets what is still to do or wait for.
func (d *decider) caughtUp(p Persisted, b *actionList) bool {
	ready := true
	for s, rec := range p.Shards {
		if !d.primaryServes(rec) {
			continue // nothing more to catch up from: its volume holds what it had
		}
		prim := d.v.node(rec.Primary)
		if !prim.Valkey.WritesFenced {
			b.add(CloseWrites{Target: Target{Shard: s, Node: prim.Name, RunID: rec.RunID}})
			ready = false
			continue
		}
		for _, n := range d.v.shard(s) {
			if n == prim || !usable(n) || !follows(n, prim) || !n.Valkey.LinkUp {
				continue
			}
			if n.Valkey.Offset < prim.Valkey.Offset {
				b.wait(Wait{Kind: WaitHibernateCatchUp, Shard: s, Node: n.Name, Peer: prim.Name, N: n.Valkey.Offset, Of: prim.Valkey.Offset})
				ready = false
			}
		}
	}
	return ready
}

// wokenPods is how many pods per shard a wake starts: those the shards ran when they stopped
// (the recorded count: a hibernation starts only once the objects ask for it), or the spec's
// if it asks for more. A spec lowered while the cluster slept must not leave a claim
// unstarted: the primary may have restarted empty before the stop, and then the write its
// replicas acknowledged by WAIT may be only on the ordinals beyond the new count
// (regressions/wake-with-fewer-pods-starts-every-claim.sched). Once Steady, the ordinary
// scale-down, with its guards, removes the pods beyond the spec.
func (d *decider) wokenPods(p Persisted) int {
	return max(d.specPods(), p.PodsPerShard)
}

// bootShards is how many shards a bootstrap wires: the spec's, or, for a wake, the shards that
// ran when the pods stopped if the spec now asks for fewer, and for a first bootstrap on kept
// claims, every shard a kept claim is for (keptShards). A shard left unstarted would take
// the writes on its kept claims with it (the bootstrap assigns its slots to the others, empty);
// woken, it is elected by its data like the others, and from Steady the ordinary resharding
// moves its slots, keys and all, before it is removed
// (regressions/cluster-persistent-wake-with-fewer-shards-drops-a-shard.sched,
// regressions/cluster-persistent-recreated-with-fewer-shards-drops-a-shard.sched).
func (d *decider) bootShards(p Persisted) int {
	if p.State == Bootstrapping && p.Op.Hibernation.Wake && d.v.spec.Mode == ModeCluster {
		return max(d.v.spec.Shards, len(strings.Fields(p.Op.Hibernation.From)))
	}
	return max(d.v.spec.Shards, d.keptShards(p))
}

// wakeWaits says which pods of shard s a waking bootstrap still waits for ("": none, or no
// wake): every pod the wake starts (wokenPods) must answer before the shard's first node is
// chosen.
func (d *decider) wakeWaits(p Persisted, s int) string {
	if !p.Op.Hibernation.Wake {
		return ""
	}
	answering := map[int]bool{}
	for _, n := range d.v.shard(s) {
		if usable(n) {
			answering[n.Ordinal] = true
		}
	}
	var missing []string
	for o := 0; o < d.wokenPods(p); o++ {
		if !answering[o] {
			missing = append(missing, fmt.Sprintf("ordinal %d", o))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("waking: shard %d: %s of the kept claims do(es) not answer yet: any of them may hold the newest data (to go on without it, name the pod whose data wins in the annotation valkey.fsm.dev/bootstrap-from)", s, strings.Join(missing, ", "))
}

// hibernatedForGood reports whether the StatefulSets ask for no pod and none is left.
func (d *decider) hibernatedForGood() bool {
	return d.obs.Objects.Replicas == StoppedReplicas && len(d.runningPods()) == 0
}

// runningPods lists the cluster's pods that exist.
func (d *decider) runningPods() []string {
	var out []string
	for _, n := range d.obs.Nodes {
		if n.Pod.Exists {
			out = append(out, n.Name)
		}
	}
	return out
}
