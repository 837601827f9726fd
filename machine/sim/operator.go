package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/replay"
)

// Status is what the simulated Kubernetes API keeps for the cluster: the machine's persisted
// state, the state conditions and the bounded history. It survives operator crashes.
type Status struct {
	Persisted  machine.Persisted
	Conditions []machine.Condition
	History    []machine.HistoryRecord
}

// Operator is the simulated operator: observe, decide, persist, act, one unit of work per
// step. Its memory (probe counts, the queue of actions still to carry out) is lost when it
// crashes; the status and the journal (on its volume) are not.
type Operator struct {
	w        *World
	status   Status
	journal  []machine.Entry
	sabotage Sabotage

	// folded is the journal folded so far (kept up to date entry by entry); stored is the
	// persisted state as it reads back from the API (a JSON round trip: Clone), for the checks.
	folded machine.Folded
	stored machine.Persisted
	// decided counts the decisions checked (checkDecision), to pick those the rebuilt
	// machine is asked about.
	decided int

	probes   map[string]int
	answered map[string]string // per node, the run id of the process that last answered
	// refusedLoads holds, per restore request, why a load of it was refused for its content.
	refusedLoads map[string]string
	// turn is the last turn, whose plan is being carried out; failing are the failure records
	// of the turns before it.
	turn        *machine.Turn
	failing     []machine.ActionFailure
	inflight    machine.Action
	inflightDue int64

	conflicts, failures, slowTicks int

	// clock names this incarnation's clock; skew is how far it reads from the world's ticks.
	clock string
	skew  int64

	// settled: the last reconcile found nothing to do (no transition, no action).
	settled bool
	// lastDecision is kept for the trace.
	lastDecision machine.Decision

	// records is the journal with observations (Options.Journal; see journal.go), and
	// journaledFP the fingerprint of the observation kept last, for repeats.
	records      []replay.Record
	journaledFP  [32]byte
	journaledAny bool
}

func newOperator(w *World, sab Sabotage) *Operator {
	w.incarnations++
	return &Operator{
		clock:        fmt.Sprintf("op%d", w.incarnations),
		w:            w,
		sabotage:     sab,
		probes:       map[string]int{},
		answered:     map[string]string{},
		refusedLoads: map[string]string{},
		status:       Status{Persisted: machine.Persisted{State: machine.Bootstrapping}, Conditions: machine.InitialConditions(timeOf(w.tick))},
		stored:       machine.Persisted{State: machine.Bootstrapping},
	}
}

// step gives the operator one unit of work: finish a slow action, carry out the next planned
// action, or reconcile (machine.StartTurn, machine.Turn.Step: the operator's loop).
func (o *Operator) step() {
	w := o.w
	if o.inflight != nil {
		if w.tick >= o.inflightDue {
			a := o.inflight
			o.inflight = nil
			o.act(a)
		}
		return
	}
	if o.turn != nil {
		if o.turn.Step(o) {
			return
		}
		// The plan is done: its failure records are kept for the next one.
		o.failing, o.turn = o.turn.Failing(), nil
	}
	o.reconcile()
}

// errInjected is the failure a FailActions fault makes the next actions report.
var errInjected = errors.New("failed (injected)")

// simBackOff is the simulated operator's back-off: none, so that every schedule retries a
// failed action as soon as the machine decides it again (the most retries a schedule can
// explore). The plan's skip rules are the operator's; only the wait differs.
func simBackOff(int32) time.Duration { return 0 }

// Do carries out one planned action (the simulated operator takes one per step), or fails it
// (FailActions) or leaves it in flight (SlowActions) as the faults ask.
func (o *Operator) Do(run []machine.Action) []error {
	a := run[0]
	if o.failures > 0 {
		o.failures--
		return []error{errInjected}
	}
	if o.slowTicks > 0 {
		o.inflight, o.inflightDue = a, o.w.tick+int64(o.slowTicks)
		o.slowTicks = 0
		o.w.note("operator: %s is slow", a)
		return []error{machine.ErrPending}
	}
	return []error{o.apply(a)}
}

// Skipped notes an action the plan does not run.
func (o *Operator) Skipped(pl machine.Planned) {
	switch pl.Verdict {
	case machine.SkipBlocked:
		o.w.note("operator: %s skipped: it depends on an action that failed", pl.Action)
	case machine.SkipBackingOff:
		o.w.note("operator: %s skipped: backing off after %d failures", pl.Action, pl.Prior.Count)
	}
}

// Done notes an action's outcome.
func (o *Operator) Done(pl machine.Planned, _ machine.ActionFailure, err error) {
	if errors.Is(err, errInjected) {
		o.w.stats.ActionsRefused++
		o.w.note("operator: %s failed (injected); the actions that depend on it are skipped", pl.Action)
		return
	}
	o.applied(pl.Action, err)
}

// act carries out an action that was in flight and records its outcome in the plan; when it
// fails, the plan skips the actions that depend on it (machine.Blocked), as the real
// operator does, and the others are still done.
func (o *Operator) act(a machine.Action) {
	err := o.apply(a)
	if o.turn != nil {
		o.turn.Finish(a, err)
	}
	o.applied(a, err)
}

// apply carries out one action in the world.
func (o *Operator) apply(a machine.Action) error {
	w := o.w
	w.stats.Actions++
	w.actingClock, w.actingSkew = o.clock, o.skew
	return w.Apply(context.Background(), a)
}

// applied notes an action's outcome; a load refused for the snapshot's content is remembered.
func (o *Operator) applied(a machine.Action, err error) {
	w := o.w
	if err != nil {
		w.stats.ActionsRefused++
		var refused loadRefused
		if r, ok := a.(machine.RestoreSnapshot); ok && errors.As(err, &refused) {
			// As the operator does: a load refused for the snapshot's content is remembered
			// (in memory) and says so in the request; it is not tried again.
			o.refusedLoads[r.RequestID] = refused.why
		}
		w.note("operator: %s refused: %v", a, err)
		return
	}
	w.note("operator: %s", a)
}

// reconcile is one turn: it observes, decides, checks the machine's invariants, persists the
// transition (a conflict ends the turn) and plans the actions (machine.StartTurn).
func (o *Operator) reconcile() {
	o.w.stats.Reconciles++
	t, err := machine.StartTurn(o, machine.TurnConfig{Prior: o.failing, BackOff: simBackOff})
	if err != nil {
		return
	}
	o.turn = t
	o.settled = t.Settled()
}

// Observe is what the simulated operator sees, as the operator prepares it: rotation and
// retire requests removed once done, refused loads remembered, the switchover request
// answered.
func (o *Operator) Observe() (machine.Persisted, machine.Observation, error) {
	w := o.w
	// As the operator does with its annotations: a rotation request is removed once the status
	// records it (or its completion), a retire request when no rotation is in progress.
	p := o.status.Persisted
	if r := w.spec.Rotation; r != nil && (p.Rotation.ID == r.ID || p.Rotated == r.ID) {
		w.spec.Rotation = nil
	}
	if w.spec.RetireNow && p.Rotation.ID == "" {
		w.spec.RetireNow = false
	}
	pending := w.prepareRotation(p)
	obs := w.observeWith(o.probes, o.answered)
	if pending != "" {
		r := *obs.Spec.Rotation
		r.Pending = pending
		obs.Spec.Rotation = &r
	}
	if t := p.Op.Restore.Request; p.State == machine.Restoring && o.refusedLoads[t] != "" {
		obs.Spec.RefusedLoad = machine.RefusedLoad{ID: t, Why: o.refusedLoads[t]}
	}
	if r := obs.Spec.Restore; r != nil && o.refusedLoads[r.ID] != "" {
		refused := *r
		refused.Pending = "refused: " + o.refusedLoads[r.ID]
		obs.Spec.Restore = &refused
	}
	obs.Time, obs.Clock = timeOf(w.tick+o.skew), o.clock
	if o.sabotage == SabotageOneClock {
		obs.Clock = "op"
	}
	obs = o.sabotage.observation(o.status.Persisted.State, obs)
	if machine.AnswerSwitchover(o.status.Persisted, obs, w.spec.Switchover) != machine.SwitchoverPending {
		// As the operator does: a request that is done, or names no pod, is removed.
		w.note("operator: switchover to %s answered, request removed", w.spec.Switchover.To)
		w.spec.Switchover, obs.Spec.Switchover = nil, nil
	}
	return o.status.Persisted, obs, nil
}

// Decide decides, and checks the containments the machine claims against the world's ground
// truth (the oracle) unless it is off.
func (o *Operator) Decide(p machine.Persisted, obs machine.Observation) machine.Decision {
	if o.w.oracle.off {
		return machine.Decide(p, obs)
	}
	d, claims := machine.DecideClaims(p, obs)
	o.w.checkContainments(claims)
	return d
}

// Decided checks the decision (checkDecision, each promotion) and returns the actions the
// sabotage, if any, makes of it.
func (o *Operator) Decided(obs machine.Observation, d machine.Decision) []machine.Action {
	w := o.w
	o.lastDecision = d
	if d.Waiting.Kind == machine.WaitDeposedMayHoldTheLine {
		w.stats.DeposedWaits++
	}
	if w.trace != nil && len(d.Actions) > 0 {
		w.note("operator: decided %s", d)
	}
	o.checkDecision(obs, d)
	actions := o.sabotage.actions(w, d.Next.State, d.Actions)
	for _, a := range actions {
		switch a := a.(type) {
		case machine.Promote:
			w.checkPromotion(a)
		case machine.ForgetNode:
			w.checkForget(a)
		}
	}
	return actions
}

// errStatusConflict is a status write the simulated API refused (StatusConflict).
var errStatusConflict = errors.New("status conflict")

// Persist writes the transition, unless a StatusConflict fault refuses it.
func (o *Operator) Persist(obs machine.Observation, d machine.Decision) error {
	if o.conflicts > 0 {
		o.conflicts--
		o.w.note("operator: status conflict, %s not persisted; observe again", d.Transition)
		return errStatusConflict
	}
	o.persist(obs, d)
	return nil
}

// Journal records the decision (journal.go).
func (o *Operator) Journal(obs machine.Observation, d machine.Decision) { o.journalDecision(obs, d) }

// Waiting notes what a turn that does nothing waits for.
func (o *Operator) Waiting(why machine.Wait) { o.w.note("operator: waiting: %s", why) }

// persist writes the transition: status (state, conditions, history) and the journal.
func (o *Operator) persist(obs machine.Observation, d machine.Decision) {
	w := o.w
	t := *d.Transition
	prev := o.status.Persisted.Shards
	o.status.Persisted = d.Next
	w.recorded = append(w.recorded[:0:0], d.Next.Shards...)
	for s, rec := range d.Next.Shards {
		if s >= len(prev) || prev[s].Primary != rec.Primary || prev[s].RunID != rec.RunID {
			if n := w.byName(rec.Primary); n != nil && n.runID == rec.RunID {
				w.setHolder(s, n)
			}
		}
	}
	o.status.Conditions = machine.ApplyTransition(o.status.Conditions, t)
	h, err := machine.AppendHistory(o.status.History, machine.RecordOf(t), historyLimit)
	if err != nil {
		w.violate(ViolationMachine, "%v", err)
	}
	o.status.History = h
	if e, ok := machine.EntryFor(d, obs); ok {
		o.journal = append(o.journal, e)
	}
	o.store(d.Next)
	w.stats.Transitions++
	w.stats.Edges[edgeName(t.From, t.Event, t.To)]++
	w.note("operator: %s", t)
	o.checkPersisted()
}

func edgeName(from machine.State, e machine.Event, to machine.State) string {
	return string(from) + " --" + string(e) + "--> " + string(to)
}

// crash restarts the operator: memory lost; an action in flight took effect only if inFlight.
func (o *Operator) crash(inFlight bool, skew int64) {
	if o.inflight != nil && inFlight {
		o.act(o.inflight)
	}
	o.w.incarnations++
	o.clock = fmt.Sprintf("op%d", o.w.incarnations)
	o.skew += skew
	o.inflight = nil
	// The failure records are the operator's status (they survive), but the new incarnation's
	// clock may read earlier than the old one's: with no back-off they would only count.
	o.turn, o.failing = nil, nil
	o.probes = map[string]int{}
	o.answered = map[string]string{}
	o.refusedLoads = map[string]string{}
	o.settled = false
}
