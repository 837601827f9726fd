package machine

import "context"

// decider carries one Decide call: the persisted state, the observation, its index, and the
// outcome of the guard that passed.
type decider struct {
	p       Persisted
	obs     Observation
	v       *view
	outcome outcome
}

// Decide is the machine: given the persisted state and an observation it returns at most one
// transition and the actions of the resulting state. It is pure and deterministic.
//
// Rules that hold for every state:
//   - A zero Persisted is a new cluster in Bootstrapping.
//   - At most one transition per observation: an observation not newer than p.Since (the one
//     that caused the last transition) can cause none. Re-delivering an observation therefore
//     never adds a transition, and an operation takes effect before the next one is decided.
//   - An observation older than p.Since is stale (someone persisted a newer transition since
//     it was taken): no transition and no actions, observe again.
//   - Guards are tried in the table's priority order; the first that passes fires through a
//     fresh looplab FSM, which refuses anything not in the table.
func Decide(p Persisted, obs Observation) Decision {
	if p.State == "" {
		p.State = Bootstrapping
	}
	if !p.State.Valid() {
		return Decision{Next: p, Waiting: "unknown persisted state " + string(p.State)}
	}
	if p.Seq > 0 && obs.Time.Before(p.Since) {
		return Decision{Next: p, Waiting: "observation older than the last transition; observe again"}
	}
	d := &decider{p: p, obs: obs, v: newView(obs)}
	var taken *Transition
	next := p
	if p.Seq == 0 || obs.Time.After(p.Since) {
		taken, next = d.transition()
	}
	actions, waiting := d.actions(next)
	return Decision{Transition: taken, Next: next, Actions: actions, Waiting: waiting}
}

// transition fires the first rule whose guard passes, through a fresh looplab FSM.
func (d *decider) transition() (*Transition, Persisted) {
	f := newFSM(d.p.State)
	ctx := context.WithValue(context.Background(), guardKey{}, d)
	for _, r := range rulesFrom[d.p.State] {
		to, taken, err := fire(ctx, f, r.event)
		if err != nil {
			// The table and rulesFrom are built from the same rows, so looplab refusing one
			// is a programming error; staying put is the safe reaction.
			return nil, d.p
		}
		if !taken {
			continue
		}
		next := d.outcome.next
		next.State = to
		next.Seq = d.p.Seq + 1
		next.Since = d.obs.Time
		t := &Transition{Seq: next.Seq, From: d.p.State, To: to, Event: r.event, Message: d.outcome.message, Time: d.obs.Time}
		return t, next
	}
	return nil, d.p
}

// actions are what the state in p asks for, given the observation.
func (d *decider) actions(p Persisted) ([]Action, string) {
	var b actionList
	switch p.State {
	case Bootstrapping:
		d.bootstrapActions(p, &b)
	case Steady:
		d.steadyActions(p, &b)
	case FailingOver:
		d.failoverActions(p, &b)
	case Rolling:
		d.rollingActions(p, &b)
	case Resharding:
		d.reshardActions(p, &b)
	case Restoring:
		d.restoreActions(p, &b)
	}
	return b.actions, b.waiting
}

// actionList collects actions and the first reason for waiting.
type actionList struct {
	actions []Action
	waiting string
}

func (b *actionList) add(a ...Action) { b.actions = append(b.actions, a...) }

func (b *actionList) wait(why string) {
	if b.waiting == "" {
		b.waiting = why
	}
}
