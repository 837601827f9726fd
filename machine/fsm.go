package machine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/looplab/fsm"
)

// guardKey is the context key under which Decide hands the evaluating decider to the
// before_event callback.
type guardKey struct{}

// newFSM builds a looplab FSM over the table, standing in state.
func newFSM(state State) *fsm.FSM {
	return fsm.NewFSM(string(state), fsmEvents, fsm.Callbacks{
		"before_event": runGuard,
	})
}

// tableFSMs keeps built FSMs for fireFrom. Building one costs its maps of every edge and
// callback, which a profile of the simulator put at a quarter of its time; an FSM holds a
// mutex and a current state, so each is used by one decision at a time and set to that
// decision's state first, never left where the last decision took it.
var tableFSMs = sync.Pool{New: func() any { return newFSM(Bootstrapping) }}

// fireFrom tries event from state through a table FSM set to state (see fire).
func fireFrom(ctx context.Context, state State, event Event) (State, bool, error) {
	f := tableFSMs.Get().(*fsm.FSM)
	f.SetState(string(state))
	to, taken, err := fire(ctx, f, event)
	if err == nil {
		// An FSM that failed in an unforeseen way may hold a transition half done: drop it.
		tableFSMs.Put(f)
	}
	return to, taken, err
}

// runGuard is the single before_event callback: looplab takes an event only if the decider
// approved it, that is, if its rule's guard passed on this decision's inputs. A FSM built
// for rendering or table checks has no decider in the context and accepts every event.
func runGuard(ctx context.Context, e *fsm.Event) {
	d, ok := ctx.Value(guardKey{}).(*decider)
	if !ok {
		return
	}
	if d.approved != Event(e.Event) || ruleFor(Event(e.Event), State(e.Src)) == nil {
		e.Cancel(fmt.Errorf("%s from %s was not approved by its guard", e.Event, e.Src))
	}
}

// fire tries event from the FSM's current state. It reports whether the guard passed and the
// destination. A self-loop comes back from looplab as NoTransitionError, which is a taken
// transition here, not a failure.
func fire(ctx context.Context, f *fsm.FSM, event Event) (State, bool, error) {
	src := f.Current()
	err := f.Event(ctx, string(event))
	var noTransition fsm.NoTransitionError
	var canceled fsm.CanceledError
	switch {
	case err == nil:
		return State(f.Current()), true, nil
	case errors.As(err, &noTransition):
		return State(src), true, nil
	case errors.As(err, &canceled):
		return "", false, nil
	default:
		return "", false, err
	}
}
