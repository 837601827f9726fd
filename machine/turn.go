package machine

import (
	"errors"
	"time"
)

// One turn of the loop: observe, decide, persist the transition, journal, plan the actions,
// act. The operator and the simulator both run their turns through StartTurn and Turn.Step,
// each against its own world (TurnWorld), so a rule of the loop is written once:
//
//   - a transition that cannot be persisted (a conflict, a stale status) ends the turn: none
//     of the decision's actions run, and nothing is journaled;
//   - the actions carried out are those decided for Next, and only once Next is persisted;
//   - the failures of one turn's actions feed the next turn's plan (ActPlan's back-off and
//     blocking);
//   - a turn is settled when it made no transition, planned no action and waits for nothing.
//
// The driver reads no clock and does no I/O of its own: the world observes, writes, journals
// and acts, and says what time it is.

// TurnWorld is what a turn runs against.
type TurnWorld interface {
	// Observe is the persisted state and this turn's observation, with the switchover request
	// already answered (a request that is done or refused is not in it).
	Observe() (Persisted, Observation, error)
	// Decide decides on them (Decide, or a variant that reports more to the world).
	Decide(p Persisted, obs Observation) Decision
	// Decided is told the decision before anything of it is persisted, and returns the
	// actions to carry out: d.Actions, unless the world has reasons to change them.
	Decided(obs Observation, d Decision) []Action
	// Persist writes d's transition (only called when there is one). An error ends the turn.
	Persist(obs Observation, d Decision) error
	// Journal records the decision once it stands (persisted, or without a transition).
	Journal(obs Observation, d Decision)
	// Waiting is told why a turn that does nothing waits.
	Waiting(why Wait)
}

// TurnActor carries out the actions of a turn's plan.
type TurnActor interface {
	// Do carries out the actions of a run the plan says to run (one action, or slot migrations
	// that may run side by side), and returns each one's outcome by index. ErrPending: the
	// action goes on after Do returns, and its outcome is reported with Turn.Finish.
	Do(run []Action) []error
	// Skipped is told of an action the plan does not run (Planned.Verdict says why).
	Skipped(pl Planned)
	// Done is told the outcome of an action that ran; f is its failure record (Count 0: it
	// succeeded).
	Done(pl Planned, f ActionFailure, err error)
}

// ErrPending is an action's outcome that is not known yet: the world reports it later with
// Turn.Finish.
var ErrPending = errors.New("action still in progress")

// TurnConfig is what a turn's plan needs from before it.
type TurnConfig struct {
	// Prior are the failure records the last turns left (see ActPlan).
	Prior []ActionFailure
	// Now reads the time the plan's back-off compares with, once the turn has decided; nil:
	// the observation's time. (The driver reads no clock: the world's is passed in.)
	Now func() time.Time
	// BackOff is how long an action that failed count times in a row waits.
	BackOff func(count int32) time.Duration
	// Runs: Step carries out a run of slot migrations at once (ActPlan.NextRun), rather than
	// one action per step.
	Runs bool
}

// Turn is one turn after its decision: what was observed and decided, and the plan of its
// actions still to carry out.
type Turn struct {
	Persisted   Persisted
	Observation Observation
	Decision    Decision
	// Actions are the actions planned (Decided's answer), all of them for Decision.Next.
	Actions []Action
	plan    *ActPlan
	runs    bool
}

// StartTurn observes, decides, persists the transition and journals the decision, and plans
// its actions. An error from Observe or Persist ends the turn (no Turn): the next one observes
// again.
func StartTurn(w TurnWorld, c TurnConfig) (*Turn, error) {
	p, obs, err := w.Observe()
	if err != nil {
		return nil, err
	}
	d := w.Decide(p, obs)
	actions := w.Decided(obs, d)
	if d.Transition != nil {
		if err := w.Persist(obs, d); err != nil {
			return nil, err
		}
	}
	w.Journal(obs, d)
	t := &Turn{Persisted: p, Observation: obs, Decision: d, Actions: actions, runs: c.Runs}
	now := obs.Time
	if c.Now != nil {
		now = c.Now()
	}
	t.plan = NewActPlan(actions, c.Prior, now, c.BackOff)
	if d.Transition == nil && len(actions) == 0 && !d.Waiting.IsZero() {
		w.Waiting(d.Waiting)
	}
	return t, nil
}

// Settled: the turn made no transition, planned no action and waits for nothing.
func (t *Turn) Settled() bool {
	return t.Decision.Transition == nil && len(t.Actions) == 0 && t.Decision.Waiting.IsZero()
}

// Acted: the turn changed something (a transition, or actions planned).
func (t *Turn) Acted() bool { return t.Decision.Transition != nil || len(t.Actions) > 0 }

// Step carries out the plan's next action (or run, with TurnConfig.Runs) through a: the ones
// skipped are told as skipped, the others are done and their outcomes recorded. False when
// nothing was left to carry out.
func (t *Turn) Step(a TurnActor) bool {
	var run []Planned
	if t.runs {
		run = t.plan.NextRun()
	} else if pl, ok := t.plan.Next(); ok {
		run = []Planned{pl}
	}
	if len(run) == 0 {
		return false
	}
	var doing []Action
	for _, pl := range run {
		if pl.Verdict == Run {
			doing = append(doing, pl.Action)
		}
	}
	var results []error
	if len(doing) > 0 {
		results = a.Do(doing)
	}
	i := 0
	for _, pl := range run {
		if pl.Verdict != Run {
			a.Skipped(pl)
			continue
		}
		err := results[i]
		i++
		if errors.Is(err, ErrPending) {
			continue
		}
		a.Done(pl, t.plan.Done(pl.Action, err), err)
	}
	return true
}

// Act carries out every action left in the plan.
func (t *Turn) Act(a TurnActor) {
	for t.Step(a) {
	}
}

// Finish records the outcome of an action Do left pending.
func (t *Turn) Finish(a Action, err error) ActionFailure { return t.plan.Done(a, err) }

// Failing are the failure records this turn leaves for the next one (ActPlan.Failing).
func (t *Turn) Failing() []ActionFailure { return t.plan.Failing() }
