package machine

import "context"

// decider carries one Decide call: the persisted state, the observation, its index, and the
// outcome of the guard that passed.
type decider struct {
	p   Persisted
	obs Observation
	v   *view
	// view is the memory v points to when the decider is pooled (takeDecider).
	view view
	// approved is the event whose guard passed, the only one looplab may take.
	approved Event
	// claims, when not nil, collects the election model's containment claims (DecideClaims).
	claims *[]Containment
}

// Decide is the machine: given the persisted state and an observation it returns at most one
// transition and the actions of the resulting state. It is pure and deterministic.
//
// Rules that hold for every state:
//   - A zero Persisted is a new cluster in Bootstrapping.
//   - At most one transition per observation: an observation not newer than p.Since (the one
//     that caused the last transition) can cause none. Re-delivering an observation therefore
//     never adds a transition, and an operation takes effect before the next one is decided.
//   - Times are only compared on the same clock (Observation.Clock): an observation of
//     another clock (a new operator incarnation) is taken as new.
//   - An observation older than p.Since is stale (someone persisted a newer transition since
//     it was taken): no transition and no actions, observe again.
//   - Guards are tried in the table's priority order; the first that passes fires through a
//     looplab FSM set to the persisted state (used by that decision alone, never left in the
//     state of another), which refuses anything not in the table.
func Decide(p Persisted, obs Observation) Decision { return decide(p, obs, nil) }

func decide(p Persisted, obs Observation, claims *[]Containment) Decision {
	if p.State == "" {
		p.State = Bootstrapping
	}
	if !p.State.Valid() {
		return Decision{Next: p, Waiting: Wait{Kind: WaitUnknownState, Detail: string(p.State)}}
	}
	sameClock := obs.Clock == p.Clock
	if p.Seq > 0 && sameClock && obs.Time.Before(p.Since) {
		return Decision{Next: p, Waiting: Wait{Kind: WaitStaleObservation}}
	}
	d := takeDecider(p, obs)
	d.claims = claims
	defer d.release()
	var taken *Transition
	next := p
	// Times of another clock say nothing about order: a new operator incarnation whose clock
	// is behind the last transition's must still decide.
	if p.Seq == 0 || !sameClock || obs.Time.After(p.Since) {
		taken, next = d.transition()
	}
	actions, waiting := d.actions(next)
	return Decision{Transition: taken, Next: next, Actions: actions, Waiting: waiting}
}

// transition evaluates the guards of the rules leaving the persisted state in priority order
// and fires the first that passes through a looplab FSM set to that state, which refuses
// anything the table does not have. An FSM is only taken when there is something to fire:
// most observations cause no transition.
func (d *decider) transition() (*Transition, Persisted) {
	for _, r := range rulesFrom[d.p.State] {
		if !d.applies(r) {
			continue
		}
		out, pass := r.guard(d)
		if !pass {
			continue
		}
		d.approved = r.event
		ctx := context.WithValue(context.Background(), guardKey{}, d)
		to, taken, err := fireFrom(ctx, d.p.State, r.event)
		if err != nil || !taken {
			// The table and rulesFrom are built from the same rows, so looplab refusing one
			// is a programming error; staying put is the safe reaction.
			return nil, d.p
		}
		if out.why.Kind != ReasonNone {
			out.message = out.why.String() + out.message
		}
		next := out.next
		next.Shards = d.recordClaims(next.Shards)
		var resyncs string
		next.Shards, resyncs = d.resyncDeposed(next.Shards)
		if resyncs != "" {
			out.message += "; " + resyncs
		}
		var resynced string
		next.Shards, resynced = d.forgetResynced(next.Shards)
		if resynced != "" {
			out.message += "; " + resynced
		}
		next.State = to
		next.Seq = d.p.Seq + 1
		next.Since = d.obs.Time
		next.Clock = d.obs.Clock
		t := &Transition{Seq: next.Seq, From: d.p.State, To: to, Event: r.event, Why: out.why, Message: out.message, Time: d.obs.Time}
		return t, next
	}
	return nil, d.p
}

// actions are what the state in p asks for, given the observation.
func (d *decider) actions(p Persisted) ([]Action, Wait) {
	var b actionList
	switch p.State {
	case Bootstrapping:
		d.bootstrapActions(p, &b)
	case Steady:
		d.steadyActions(p, &b)
	case FailingOver:
		if d.v.spec.Mode == ModeSentinel && !p.Op.Election.TakenOver {
			if p.Op.Election.Planned {
				d.sentinelHandOverActions(p, &b)
				break
			}
			d.sentinelFailoverActions(p, &b)
			break
		}
		d.failoverActions(p, &b)
	case Rolling:
		d.rollingActions(p, &b)
	case Resharding:
		d.reshardActions(p, &b)
	case Restoring:
		d.restoreActions(p, &b)
	case Hibernated:
		d.hibernateActions(p, &b)
	}
	// Last: growing volumes depends on nothing above and must not wait for it.
	d.expandVolumes(&b)
	return b.actions, b.waiting
}

// actionList collects actions and the first reason for waiting.
type actionList struct {
	actions []Action
	waiting Wait
}

func (b *actionList) add(a ...Action) { b.actions = append(b.actions, a...) }

// wait keeps why when it is the first reason with words: a rule that passes on another's
// reason may pass on none (an empty Detail).
func (b *actionList) wait(why Wait) {
	if b.waiting.IsZero() && why.String() != "" {
		b.waiting = why
	}
}
