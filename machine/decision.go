package machine

import (
	"fmt"
	"strings"
	"time"
)

// Decision is what Decide returns: at most one transition to persist, and the actions to
// carry out after it has been persisted.
type Decision struct {
	// Transition is nil when the state stays as it is. A self-loop (From == To) is a
	// transition too: it records new step markers (a promotion, a hand-over) in Next.
	Transition *Transition
	// Next is the persisted state to write when Transition is not nil; otherwise it equals
	// the input.
	Next Persisted
	// Actions are for the actuators, in order. They belong to Next.State.
	Actions []Action
	// Waiting explains, when nothing can progress, what the machine is waiting for (its
	// String is the status message and log line). Zero when there is nothing to wait for.
	Waiting Wait
}

// Transition is one edge of the table being taken.
type Transition struct {
	Seq   uint64
	From  State
	To    State
	Event Event
	// Why is the reason as a value, for the kinds given as one (Reason); zero otherwise.
	Why Reason
	// Message says in words why, for the history and the Kubernetes Event: Why's text first,
	// when it is set.
	Message string
	// Time is the observation time that caused the transition.
	Time time.Time
}

// Reason is the CamelCase reason recorded in conditions and history.
func (t Transition) Reason() string { return t.Event.Reason() }

func (t Transition) String() string {
	return fmt.Sprintf("#%d %s --%s--> %s: %s", t.Seq, t.From, t.Event, t.To, t.Message)
}

func (d Decision) String() string {
	var b strings.Builder
	if d.Transition != nil {
		b.WriteString(d.Transition.String())
	} else {
		b.WriteString("stay " + string(d.Next.State))
	}
	for _, a := range d.Actions {
		b.WriteString("; ")
		b.WriteString(a.String())
	}
	if !d.Waiting.IsZero() {
		b.WriteString("; waiting: ")
		b.WriteString(d.Waiting.String())
	}
	return b.String()
}
