package machine

import "fmt"

// Restarting the sentinels onto a changed template (ModeSentinel): an image, the sentinels'
// resources, pod labels. Their StatefulSet rolls nothing by itself (OnDelete), so that a
// change never restarts several sentinels at once, nor one in the middle of a failover: a
// failover's leader needs a majority of the sentinels' votes, and every sentinel down is one
// vote fewer. The machine restarts them (RollSentinel) one at a time, in Steady only, once
// the StatefulSet asks for the spec's template and the data pods run theirs (a change of
// image rolls the data pods first), and, for each step:
//
//   - nothing holds planned work, the shard is converged and there are as many sentinel pods
//     as the StatefulSet asks for (sentinelsStepHeld, converged), none of them being deleted,
//     and no other action on a sentinel is decided beside it (a reset forgets the others);
//   - every sentinel is settled (sentinelUnsettled): it answers, monitors the recorded
//     primary under the recorded epoch with no failover, knows exactly the others and lists
//     exactly the replicas, and its pod is ready. The one restarted last has come back from
//     its file and been heard by the others.
//
// A sentinel left behind on the old template that does not answer (its image cannot be
// pulled, say, or it crashes on the old settings) is restarted too once every other sentinel
// is settled: it casts no vote as it is, and waiting for it to answer first would keep the
// template that may be what stops it for ever.
//
// A restarted sentinel keeps its id and what it knew: the file on its volume (see
// actuators/kube's sentinels.go). Sentinels scale first (sentinelscale.go): a step of either
// waits for the cluster's sentinels to settle.

// sentinelRollActions restarts the next sentinel whose pod runs another revision than the
// spec's, or says what holds it (Steady, ModeSentinel). It comes after the rest of Steady's
// actions: a decision that tells a sentinel something (monitor, reset) restarts none.
func (d *decider) sentinelRollActions(p Persisted, b *actionList) {
	rev := d.v.spec.SentinelRevision
	if d.v.spec.Mode != ModeSentinel || p.State != Steady || rev == "" || d.obs.Objects.SentinelRevision != rev {
		return // ensureObjects gives the StatefulSet the template first
	}
	fresh, stale := 0, []Sentinel{}
	for _, s := range d.obs.Sentinels {
		switch {
		case s.Revision == rev:
			fresh++
		case s.Revision != "":
			stale = append(stale, s)
		}
	}
	if len(stale) == 0 {
		return
	}
	next, why := d.sentinelToRoll(p, stale, b)
	if next == nil {
		b.wait(Wait{Kind: WaitSentinelsRolling, N: int64(fresh), Of: int64(d.sentinelsRun()), Detail: why})
		return
	}
	b.add(RollSentinel{SentinelTarget: SentinelTargetOf(*next), Revision: rev})
}

// sentinelToRoll is the stale sentinel to restart now (nil, with why, when none may be): one
// that does not answer if it is the only sentinel not settled, otherwise the first stale one
// once every sentinel is settled.
func (d *decider) sentinelToRoll(p Persisted, stale []Sentinel, b *actionList) (*Sentinel, string) {
	if d.v.spec.Sentinels != d.sentinelsRun() {
		return nil, fmt.Sprintf("the sentinels go from %d to %d first", d.sentinelsRun(), d.v.spec.Sentinels)
	}
	if len(d.staleRevision(d.v.spec.Revision)) > 0 {
		return nil, "the data pods are rolled first"
	}
	if why := d.sentinelsStepHeld(p); why != "" {
		return nil, why
	}
	if ok, why := d.converged(p); !ok {
		return nil, why
	}
	for _, a := range b.actions {
		switch a.(type) {
		case SentinelMonitor, SentinelReset, SentinelRemove:
			return nil, "a sentinel is being told the group (" + a.String() + ")"
		}
	}
	rec := p.Shards[0]
	prim := d.v.node(rec.Primary)
	unsettled, why := []string{}, ""
	for _, s := range d.obs.Sentinels {
		w := d.sentinelUnsettled(p, s)
		switch {
		case w != "":
		case s.Terminating:
			w = s.Name + "'s pod is being deleted"
		case !s.PodReady:
			// It answers the operator from its file at once, a second or two before its pod
			// is ready: the next restart waits, so that Kubernetes too never counts two
			// sentinels unavailable (their disruption budget allows one).
			w = s.Name + "'s pod is not ready yet"
		case d.listsGoneReplica(s) || d.knowsFewerReplicas(0, prim, s):
			// A reset is due, or one made is not over: it forgets the others meanwhile.
			w = s.Name + " does not list exactly the replicas yet"
		}
		if w != "" {
			unsettled = append(unsettled, s.Name)
			if why == "" {
				why = w
			}
		}
	}
	switch {
	case len(unsettled) == 0:
		return &stale[0], ""
	case len(unsettled) == 1:
		for i, s := range stale {
			if s.Name == unsettled[0] && !s.Reachable && !s.Terminating {
				return &stale[i], ""
			}
		}
	}
	return nil, why
}
