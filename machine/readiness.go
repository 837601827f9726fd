package machine

import (
	"fmt"
	"strings"
	"time"
)

// The conditions for users and tools: Ready, Progressing and Degraded. Unlike the state
// conditions they are not the machine's record: they are computed from each observation (as
// Cluster API computes its summary conditions), so a cluster can be Steady and not Ready, and
// a blocked failover shows as not Ready with the reason it waits for.

// The observed condition types.
const (
	ConditionProgressing = "Progressing"
	ConditionDegraded    = "Degraded"
)

// ObservedTypes are the condition types Observed computes.
func ObservedTypes() []string {
	return []string{ConditionReady, ConditionProgressing, ConditionDegraded}
}

// Observed computes Ready, Progressing and Degraded (without LastTransitionTime, which the
// caller keeps while a status does not flip) from the persisted state a decision leads to (p,
// d.Next), the observation it was taken on and the decision. Messages name nodes and reasons,
// never offsets or times, so that an idle cluster's conditions do not change.
func Observed(p Persisted, obs Observation, d Decision) []Condition {
	dc := takeDecider(p, obs)
	defer dc.release()
	return []Condition{dc.ready(p, d), dc.progressing(p, d), dc.degraded(p)}
}

func cond(typ string, ok bool, reason, message string) Condition {
	s := ConditionFalse
	if ok {
		s = ConditionTrue
	}
	return Condition{Type: typ, Status: s, Reason: reason, Message: message}
}

// ready: every shard's recorded primary answers as the recorded process, a primary open for
// writes.
func (d *decider) ready(p Persisted, dec Decision) Condition {
	waiting := dec.Waiting.String()
	if p.State == Hibernated {
		return cond(ConditionReady, false, "Hibernated", "hibernated on purpose (spec.hibernate): "+waiting)
	}
	if len(p.Shards) == 0 {
		msg := "no primary yet"
		if waiting != "" {
			msg = waiting
		}
		return cond(ConditionReady, false, "Bootstrapping", msg)
	}
	var serving []string
	for s := range p.Shards {
		rec := p.Shards[s]
		if h, fault := d.primaryHealth(p, s); h != primaryHealthy {
			why := fault.String()
			reason := "PrimaryUnreachable"
			if h == primaryGone {
				reason = "PrimaryLost"
			}
			if waiting != "" && waiting != why {
				why += "; waiting: " + waiting
			}
			return cond(ConditionReady, false, reason, why)
		}
		prim := d.v.node(rec.Primary)
		if prim.Valkey.WritesFenced || prim.Valkey.SyncFenced {
			msg := fmt.Sprintf("shard %d: primary %s does not accept writes yet", s, rec.Primary)
			reason := "PrimaryFenced"
			if p.State == FailingOver {
				reason = string(p.Phase())
				if waiting != "" {
					msg += ": " + waiting
				}
			}
			return cond(ConditionReady, false, reason, msg)
		}
		serving = append(serving, rec.Primary)
	}
	return cond(ConditionReady, true, "PrimaryServing", strings.Join(serving, ", ")+" accept(s) writes")
}

// progressing: an operation is under way (any state but Steady), or Steady still converges.
func (d *decider) progressing(p Persisted, dec Decision) Condition {
	waiting := dec.Waiting.String()
	switch {
	case p.State == Hibernated && len(dec.Actions) == 0 && d.hibernatedForGood():
		return cond(ConditionProgressing, false, "Hibernated", "every pod stopped; the claims keep the data")
	case p.State != Steady:
		msg := string(p.Phase())
		if waiting != "" {
			msg += ": " + waiting
		}
		return cond(ConditionProgressing, true, string(p.Phase()), msg)
	case len(dec.Actions) > 0:
		kinds := map[string]bool{}
		var list []string
		for _, a := range dec.Actions {
			if !kinds[a.Kind()] {
				kinds[a.Kind()] = true
				list = append(list, a.Kind())
			}
		}
		return cond(ConditionProgressing, true, "Converging", "converging: "+strings.Join(list, ", "))
	case waiting != "":
		return cond(ConditionProgressing, true, "Waiting", waiting)
	}
	return cond(ConditionProgressing, false, "Idle", "nothing to do")
}

// degraded: a pod the objects ask for does not exist, does not run or does not answer, or
// (with a recorded primary) a node does not follow it with its link up.
func (d *decider) degraded(p Persisted) Condition {
	if p.State == Hibernated {
		return cond(ConditionDegraded, false, "Hibernated", "the pods stop on purpose (spec.hibernate)")
	}
	pods := d.objectPods(p)
	var bad []string
	for _, n := range d.v.nodes {
		if n.Ordinal >= pods {
			continue
		}
		switch {
		case !n.Pod.Exists:
			bad = append(bad, n.Name+" missing")
		case n.NotStarting() != "":
			bad = append(bad, n.Name+" does not start: "+n.NotStarting())
		case !n.Pod.Running:
			bad = append(bad, n.Name+" not running")
		case !n.Reachable:
			bad = append(bad, n.Name+" not answering")
		case n.Valkey.Loading:
			bad = append(bad, n.Name+" loading")
		case n.Shard < len(p.Shards) && n.Name != p.Shards[n.Shard].Primary:
			if prim := d.v.node(p.Shards[n.Shard].Primary); prim == nil || !follows(n, prim) || !n.Valkey.LinkUp {
				bad = append(bad, n.Name+" not in sync")
			}
		}
	}
	if len(bad) > 0 {
		return cond(ConditionDegraded, true, "NodesNotHealthy", strings.Join(bad, "; "))
	}
	return cond(ConditionDegraded, false, "AllNodesHealthy", "every node answers and follows its primary")
}

// MergeObserved returns conds with the observed conditions replaced by obs: a condition whose
// status does not change keeps its LastTransitionTime; one that flips (or is new) takes at.
func MergeObserved(conds []Condition, obs []Condition, at time.Time) []Condition {
	out := make([]Condition, 0, len(conds)+len(obs))
	for _, c := range conds {
		if !isObserved(c.Type) {
			out = append(out, c)
		}
	}
	for _, c := range obs {
		c.LastTransitionTime = at
		if old, ok := findCondition(conds, c.Type); ok && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		out = append(out, c)
	}
	return out
}

func isObserved(typ string) bool {
	for _, t := range ObservedTypes() {
		if t == typ {
			return true
		}
	}
	return false
}
