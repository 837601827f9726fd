package machine

import (
	"context"
	"errors"
	"fmt"

	"github.com/looplab/fsm"
)

// guardKey is the context key under which Decide hands the evaluating decider to the
// before_event callback.
type guardKey struct{}

// newFSM builds a fresh looplab FSM over the table, standing in state. A fresh one per
// decision: an FSM holds a mutex and a current state, and sharing one between reconciles
// would make decisions depend on the last one.
func newFSM(state State) *fsm.FSM {
	return fsm.NewFSM(string(state), fsmEvents, fsm.Callbacks{
		"before_event": runGuard,
	})
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
