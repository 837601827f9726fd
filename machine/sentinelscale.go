package machine

import "fmt"

// Changing how many sentinels run (ModeSentinel). A sentinel counts the others it knows as
// voters: a failover's leader needs a majority of them. Sentinels added or removed several at
// a time, or while the sentinels fail over, could leave that majority out of reach (removed
// sentinels still counted as voters) or take away a failover's leader; so the machine owns the
// sentinels' StatefulSet's count (EnsureObjects.Sentinels) and moves it one sentinel at a
// time towards the spec's, in Steady only, each step once the last one has settled:
//
//   - every sentinel the StatefulSet asks for answers, and no other (a removed one is gone);
//   - each monitors the group, names the recorded primary under the recorded epoch, and
//     reports no failover and the primary up;
//   - each knows exactly the others as its peers (a sentinel added has been told the group
//     and has been heard by the others; those left by a removal have been reset, one at a
//     time, by sentinelResets).
//
// Until then the objects keep their count and status says which condition holds the step.
// A sentinel added starts monitoring nothing and is told the group by sentinelMonitors; a
// sentinel removed goes with its claim (the StatefulSet's retention policy), so a later
// scale-up starts a new one.

// sentinelsRun is how many sentinels the cluster runs: what the sentinels' StatefulSet asks
// for, or the spec's count before it exists (0 outside ModeSentinel).
func (d *decider) sentinelsRun() int {
	if d.v.spec.Mode != ModeSentinel {
		return 0
	}
	if n := d.obs.Objects.Sentinels; n > 0 {
		return n
	}
	return d.v.spec.Sentinels
}

// sentinelObjects is the sentinel count EnsureObjects asks for: the spec's when the
// StatefulSet does not exist yet, otherwise one step from its count towards the spec's once the
// sentinels have settled (sentinelScalingWait says what holds the step meanwhile).
func (d *decider) sentinelObjects(p Persisted) int {
	want, run := d.v.spec.Sentinels, d.obs.Objects.Sentinels
	if d.v.spec.Mode != ModeSentinel || want <= 0 {
		return 0
	}
	if run <= 0 || run == want {
		return want
	}
	if d.sentinelCountHeld(p) != "" {
		return run
	}
	if want > run {
		return run + 1
	}
	return run - 1
}

// sentinelScalingWait is what holds the sentinels' next step in Steady (zero when none is
// due or it is not held). Steady's other reasons come first: a step also waits for them.
func (d *decider) sentinelScalingWait(p Persisted) Wait {
	want, run := d.v.spec.Sentinels, d.obs.Objects.Sentinels
	if d.v.spec.Mode != ModeSentinel || p.State != Steady || run <= 0 || run == want {
		return Wait{}
	}
	why := d.sentinelCountHeld(p)
	if why == "" {
		return Wait{}
	}
	return Wait{Kind: WaitSentinelsScaling, N: int64(run), Of: int64(want), Detail: why}
}

// sentinelCountHeld says why the sentinels may not gain or lose one now ("" when they may):
// besides what holds any planned work (sentinelsUnsettled), every sentinel must be settled.
func (d *decider) sentinelCountHeld(p Persisted) string {
	if why := d.sentinelsStepHeld(p); why != "" {
		return why
	}
	for _, s := range d.obs.Sentinels {
		if why := d.sentinelUnsettled(p, s); why != "" {
			return why
		}
	}
	return ""
}

// sentinelsStepHeld says why no step on the sentinels (one more or fewer, one restarted) may
// be taken now whatever each of them answers ("" when one may): the cluster is Steady, its
// recorded primary answers as one, nothing else holds planned work (sentinelsUnsettled), and
// there are as many sentinel pods as the StatefulSet asks for.
func (d *decider) sentinelsStepHeld(p Persisted) string {
	if p.State != Steady {
		return "the cluster is " + string(p.State)
	}
	rec := p.Shards[0]
	prim := d.v.node(rec.Primary)
	if !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary {
		return fmt.Sprintf("%s, the recorded primary, does not answer as a primary", rec.Primary)
	}
	if why := d.sentinelsUnsettled(rec); why != "" {
		return why
	}
	if run := d.sentinelsRun(); len(d.obs.Sentinels) != run {
		return fmt.Sprintf("%d sentinel pods are seen, the StatefulSet asks for %d", len(d.obs.Sentinels), run)
	}
	return ""
}

// sentinelUnsettled says why sentinel s is not settled ("" when it is): it answers, monitors
// the group, names the recorded primary under the recorded epoch, reports no failover and
// the primary up, and knows exactly the other sentinels as its peers.
func (d *decider) sentinelUnsettled(p Persisted, s Sentinel) string {
	rec := p.Shards[0]
	prim := d.v.node(rec.Primary)
	switch {
	case !s.Reachable:
		return s.Name + " does not answer"
	case !s.Monitoring:
		return s.Name + " does not monitor the group yet"
	case s.FailingOver || s.PrimaryDown:
		return s.Name + " reports a failover or the primary down"
	case prim == nil || s.PrimaryIP != prim.Pod.IP || s.ConfigEpoch != rec.ClaimEpoch:
		return fmt.Sprintf("%s names %s under config epoch %d, not %s under %d", s.Name, s.PrimaryIP, s.ConfigEpoch, rec.Primary, rec.ClaimEpoch)
	case s.Peers != d.sentinelsRun()-1:
		return fmt.Sprintf("%s knows %d other sentinels, not %d", s.Name, s.Peers, d.sentinelsRun()-1)
	}
	return ""
}
