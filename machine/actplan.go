package machine

import "time"

// ActPlan carries out one decision's actions: the act step of the loop, the same code in the
// operator and in the simulator, so a rule about which action runs (dependencies on a failed
// action, back-off after failures) is written once and explored by the simulator as the
// operator applies it. The plan decides, action by action, whether it runs or is skipped; the
// world carries out the ones that run and reports each outcome (Done). Skipped actions are
// decided again by the machine from the next observation.
//
// Failures outlive the decision: an action that failed is retried only once its back-off has
// passed (the operator keeps the records in status.failingActions), while the actions it does
// not involve go on (Blocked).
type ActPlan struct {
	actions []Action
	next    int
	prior   map[string]ActionFailure
	now     time.Time
	backOff func(count int32) time.Duration
	failed  []Action
	failing []ActionFailure
}

// ActionFailure is an action that failed the last time it was tried, as status records it.
type ActionFailure struct {
	// Action is the action's String(): the same action decided again has the same key.
	Action string
	// Count is how many times in a row it failed.
	Count     int32
	LastError string
	// RetryAt is when it may be tried again.
	RetryAt time.Time
}

// Verdict says whether a planned action runs.
type Verdict int

const (
	// Run: the world carries the action out and reports the outcome with Done.
	Run Verdict = iota
	// SkipBlocked: it involves a node an earlier action of this decision failed on.
	SkipBlocked
	// SkipBackingOff: it failed before and its retry time has not come.
	SkipBackingOff
)

// Planned is one action and what the plan decided for it.
type Planned struct {
	Action  Action
	Verdict Verdict
	// Prior is the action's failure record from before this decision (Count 0: none).
	Prior ActionFailure
}

// NewActPlan plans actions, in order, given the failure records from earlier decisions and the
// time now. backOff says how long an action that failed count times in a row waits before it
// is tried again.
func NewActPlan(actions []Action, prior []ActionFailure, now time.Time, backOff func(count int32) time.Duration) *ActPlan {
	p := &ActPlan{actions: actions, now: now, backOff: backOff}
	if len(prior) > 0 {
		p.prior = make(map[string]ActionFailure, len(prior))
		for _, f := range prior {
			p.prior[f.Action] = f
		}
	}
	return p
}

// Next is the next action and its verdict; false when every action has been planned. A
// skipped action counts as failed for the ones after it, and keeps its failure record.
func (p *ActPlan) Next() (Planned, bool) {
	if p.next >= len(p.actions) {
		return Planned{}, false
	}
	a := p.actions[p.next]
	p.next++
	pl := Planned{Action: a, Verdict: Run}
	if len(p.prior) > 0 {
		// String formats the action: only worth it when some failure is on record.
		pl.Prior = p.prior[a.String()]
	}
	switch {
	case Blocked(a, p.failed):
		pl.Verdict = SkipBlocked
	case pl.Prior.Count > 0 && p.now.Before(pl.Prior.RetryAt):
		pl.Verdict = SkipBackingOff
	}
	if pl.Verdict != Run {
		p.failed = append(p.failed, a)
		if pl.Prior.Count > 0 {
			p.failing = append(p.failing, pl.Prior)
		}
	}
	return pl, true
}

// NextRun is the next action, or, when it is a slot migration, the run of consecutive slot
// migrations it starts: they never block one another (Blocked), so the operator carries out
// the ones that run side by side and then reports each outcome.
func (p *ActPlan) NextRun() []Planned {
	first, ok := p.Next()
	if !ok {
		return nil
	}
	run := []Planned{first}
	if _, migration := first.Action.(MigrateSlots); !migration {
		return run
	}
	for p.next < len(p.actions) {
		if _, migration := p.actions[p.next].(MigrateSlots); !migration {
			break
		}
		pl, _ := p.Next()
		run = append(run, pl)
	}
	return run
}

// Done records the outcome of an action the plan said to run. A failure is counted on top of
// the action's earlier ones and sets its next try after the back-off; it blocks the later
// actions that depend on it.
func (p *ActPlan) Done(a Action, err error) ActionFailure {
	if err == nil {
		return ActionFailure{}
	}
	p.failed = append(p.failed, a)
	key := a.String()
	count := p.prior[key].Count + 1
	f := ActionFailure{Action: key, Count: count, LastError: err.Error(), RetryAt: p.now.Add(p.backOff(count))}
	p.failing = append(p.failing, f)
	return f
}

// Failing are the failure records after this decision: the new failures, and the earlier ones
// of actions that were skipped. An action that ran and succeeded has none.
func (p *ActPlan) Failing() []ActionFailure { return p.failing }
