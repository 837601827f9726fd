package machine

import "fmt"

// Telling the sentinels what to monitor (Steady, ModeSentinel). The sentinels' pods start
// from a configuration that names no group: the machine tells each one the recorded primary
// (SentinelMonitor) once, after the bootstrap or when a sentinel comes back without its file,
// and keeps their settings to the spec. A sentinel told to monitor starts the group's config
// epoch at 0 and takes a higher one from the others' hellos within seconds, so:
//
//   - while the recorded epoch is 0 (no failover since the sentinels were told), every
//     sentinel that does not monitor the group is told at once: they all start where the
//     record is;
//   - otherwise one at a time, and only while every sentinel that monitors the group is seen
//     under the recorded epoch: a majority of sentinels just told, still under epoch 0, would
//     name the recorded primary under another epoch than the record's, which reads as a
//     failover (guardSentinelFailover);
//   - when no sentinel that answers monitors the group under the recorded epoch any more (all
//     lost their files), no hello will bring the epoch back: the record's epoch goes back to 0
//     first (sentinel-epoch-reset), and they are all told.
//
// Nothing is told while a sentinel that answers names another primary, reports a failover or
// finds the primary down, or the recorded primary does not answer as a primary: a sentinel
// told then would start on a primary the others are replacing.

// sentinelsAtRecord looks at the sentinels that answer while prim, the recorded primary,
// answers as a primary: ok is false when one of them names another primary, a newer epoch
// than the record's, a failover or the primary down. Otherwise atRecord counts those that
// monitor the group under the recorded epoch, behind those under an older one, and unmonitored
// lists those that do not monitor it.
func (d *decider) sentinelsAtRecord(rec ShardRecord, prim *Node) (atRecord, behind int, unmonitored []Sentinel, ok bool) {
	if !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary {
		return 0, 0, nil, false
	}
	for _, s := range d.obs.Sentinels {
		switch {
		case !s.Reachable:
		case !s.Monitoring:
			unmonitored = append(unmonitored, s)
		case s.FailingOver || s.PrimaryDown || s.PrimaryIP != prim.Pod.IP || s.ConfigEpoch > rec.ClaimEpoch:
			return 0, 0, nil, false
		case s.ConfigEpoch == rec.ClaimEpoch:
			atRecord++
		default:
			behind++
		}
	}
	return atRecord, behind, unmonitored, true
}

// sentinelMonitors adds the SentinelMonitor actions of Steady, Rolling and a planned
// hand-over's wait (a sentinel re-created during it would otherwise hold it for ever, found by
// the exploration): the sentinels that do not
// monitor the group are told the recorded primary (all at once under epoch 0, one at a time
// otherwise), and those that monitor it under the recorded epoch with other settings than the
// spec's are given the spec's.
func (d *decider) sentinelMonitors(p Persisted, s int, b *actionList) {
	handingOver := p.State == FailingOver && p.Op.Election.Planned && !p.Op.Election.TakenOver
	if (p.State != Steady && p.State != Rolling && !handingOver) || d.sentinelsRun() <= 0 {
		return
	}
	rec := p.Shards[s]
	prim := d.v.node(rec.Primary)
	atRecord, behind, unmonitored, ok := d.sentinelsAtRecord(rec, prim)
	if !ok {
		return
	}
	want := d.sentinelSettings()
	monitor := func(t Sentinel) {
		b.add(SentinelMonitor{SentinelTarget: SentinelTargetOf(t), Primary: prim.Name, PrimaryIP: prim.Pod.IP, Settings: want})
	}
	for _, t := range d.obs.Sentinels {
		if t.Reachable && t.Monitoring && t.ConfigEpoch == rec.ClaimEpoch && t.Settings != want {
			monitor(t)
		}
	}
	switch {
	case len(unmonitored) == 0:
	case rec.ClaimEpoch == 0:
		for _, t := range unmonitored {
			monitor(t)
		}
	case atRecord > 0 && behind == 0:
		monitor(unmonitored[0])
	}
}

// sentinelResets resets (SentinelReset) a sentinel that knows more other sentinels than run
// (one removed by a scale-down, or re-created without its file, so with a new id): the others
// keep the old one as a voter, so a majority of voters may be out of reach with a majority of
// the sentinels up (seen on real sentinels: CKQUORUM said NOQUORUM with two of three up). So
// too a sentinel that lists a replica at an address no pod has, once the shard is converged
// (every pod there, at its address): a pod removed by a scale-down or re-created elsewhere,
// which Sentinel keeps for ever, down, in what it lists and counts. Only
// in Steady, with every sentinel that runs answering, each naming the recorded primary under
// the recorded epoch with no failover and the primary down in none's view, and one at a time:
// none while a sentinel knows fewer than the others (one reset finds the others again through
// their hellos, within seconds), so that no two forget the others at once.
func (d *decider) sentinelResets(p Persisted, s int, b *actionList) {
	n := d.sentinelsRun()
	if (p.State != Steady && p.State != Rolling) || n <= 0 || !d.sentinelsAllAnswer() {
		return
	}
	rec := p.Shards[s]
	prim := d.v.node(rec.Primary)
	if !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary {
		return
	}
	var stale, relearning *Sentinel
	// Whether the cluster is converged, asked at most once and only of a sentinel that lists
	// a gone address: most decisions find none.
	var settled *bool
	listsGone := func(t Sentinel) bool {
		if !d.listsGoneReplica(t) {
			return false
		}
		if settled == nil {
			ok, _ := d.converged(p)
			settled = &ok
		}
		return *settled
	}
	for i, t := range d.obs.Sentinels {
		if !t.Monitoring || t.PrimaryIP != prim.Pod.IP || t.ConfigEpoch != rec.ClaimEpoch || t.FailingOver || t.PrimaryDown {
			return
		}
		switch {
		case (t.Peers > n-1 || listsGone(t)) && stale == nil:
			stale = &d.obs.Sentinels[i]
		case (t.Peers < n-1 || d.knowsFewerReplicas(s, prim, t)) && relearning == nil:
			relearning = &d.obs.Sentinels[i]
		}
	}
	switch {
	case stale == nil:
	case relearning != nil:
		// Not settled: the reset that is due comes once the other one is done.
		b.wait(Wait{Kind: WaitSentinelsRelearning, Node: stale.Name, Peer: relearning.Name,
			Detail: fmt.Sprintf("%s knows %d other sentinels and %d replicas, %s %d and %d, of %d and %d", stale.Name, stale.Peers, len(stale.Replicas),
				relearning.Name, relearning.Peers, len(relearning.Replicas), n-1, len(d.v.shard(s))-1)})
	default:
		b.add(SentinelReset{SentinelTarget: SentinelTargetOf(*stale)})
	}
}

// listsGoneReplica reports whether t lists a replica at an address none of the shard's pods
// has; once the cluster is converged (sentinelResets asks), an address a pod left for good,
// not one between two of its pod's lives.
func (d *decider) listsGoneReplica(t Sentinel) bool {
	for _, r := range t.Replicas {
		if d.nodeAt(r.IP) == nil {
			return true
		}
	}
	return false
}

// knowsFewerReplicas reports whether t lists fewer of the replicas linked to prim than there
// are: a sentinel just reset finds them again from prim's INFO, within its INFO period.
func (d *decider) knowsFewerReplicas(s int, prim *Node, t Sentinel) bool {
	linked, listed := 0, 0
	for _, n := range d.v.shard(s) {
		if !linkedTo(n, prim) {
			continue
		}
		linked++
		for _, r := range t.Replicas {
			if r.IP == n.Pod.IP {
				listed++
				break
			}
		}
	}
	return listed < linked
}

// guardSentinelEpochReset: no sentinel that answers monitors the group under the recorded
// epoch or a newer one, those that monitor it name the recorded primary under epoch 0, a
// majority of the sentinels answer, and the recorded primary answers as a primary: the
// sentinels lost their files (or were told the group again), and no hello will bring the
// recorded epoch back. Record epoch 0, under which they are all told the recorded primary.
func guardSentinelEpochReset(d *decider) (outcome, bool) {
	p := d.p
	if len(p.Shards) == 0 || p.Shards[0].ClaimEpoch == 0 {
		return outcome{}, false
	}
	rec := p.Shards[0]
	prim := d.v.node(rec.Primary)
	atRecord, _, unmonitored, ok := d.sentinelsAtRecord(rec, prim)
	if !ok || atRecord > 0 {
		return outcome{}, false
	}
	answering, monitoring := 0, 0
	for _, s := range d.obs.Sentinels {
		if !s.Reachable {
			continue
		}
		answering++
		if s.Monitoring {
			if s.ConfigEpoch != 0 {
				return outcome{}, false
			}
			monitoring++
		}
	}
	if answering < d.sentinelMajority() {
		return outcome{}, false
	}
	next := p
	next.Shards = append([]ShardRecord(nil), p.Shards...)
	next.Shards[0].ClaimEpoch = 0
	msg := fmt.Sprintf("%d of %d sentinels answer: %d monitor no group, %d name %s under config epoch 0, none the recorded epoch %d; they are told %s again under epoch 0",
		answering, d.sentinelsRun(), len(unmonitored), monitoring, rec.Primary, rec.ClaimEpoch, rec.Primary)
	return outcome{next: next, message: msg}, true
}
