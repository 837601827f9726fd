package machine

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"github.com/looplab/fsm"
)

var (
	camelCase = regexp.MustCompile(`^[A-Z][a-zA-Z]+$`)
	kebabCase = regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
)

func TestNamesFollowTheConvention(t *testing.T) {
	states := map[string]bool{}
	for _, s := range States() {
		if !camelCase.MatchString(string(s)) {
			t.Errorf("state %q is not CamelCase", s)
		}
		states[string(s)] = true
	}
	for _, e := range Table() {
		if !kebabCase.MatchString(string(e.Event)) {
			t.Errorf("event %q is not kebab-case", e.Event)
		}
		if states[string(e.Event)] {
			t.Errorf("event %q has the name of a state", e.Event)
		}
		if !e.From.Valid() || !e.To.Valid() {
			t.Errorf("edge %+v names an unknown state", e)
		}
	}
}

func TestEventReasonIsCamelCase(t *testing.T) {
	cases := map[Event]string{EventPrimaryLost: "PrimaryLost", EventBootstrapComplete: "BootstrapComplete", EventSpecChanged: "SpecChanged"}
	for e, want := range cases {
		if got := e.Reason(); got != want {
			t.Errorf("%s.Reason() = %q, want %q", e, got, want)
		}
	}
}

// The table and looplab agree: every edge fires from its source to its destination (a
// self-loop as NoTransitionError), and every (state, event) pair that is not an edge is
// refused.
func TestLooplabExecutesExactlyTheTable(t *testing.T) {
	events := map[Event]bool{}
	for _, e := range Table() {
		events[e.Event] = true
	}
	for _, s := range States() {
		for ev := range events {
			f := newFSM(s)
			err := f.Event(context.Background(), string(ev))
			r := ruleFor(ev, s)
			var noTransition fsm.NoTransitionError
			switch {
			case r == nil && err == nil:
				t.Errorf("%s from %s: looplab accepted an event the table does not have", ev, s)
			case r == nil:
				var invalid fsm.InvalidEventError
				if !errors.As(err, &invalid) {
					t.Errorf("%s from %s: want InvalidEventError, got %v", ev, s, err)
				}
			case r.dst(s) == s:
				if !errors.As(err, &noTransition) {
					t.Errorf("self-loop %s from %s: want NoTransitionError, got %v", ev, s, err)
				}
			case err != nil:
				t.Errorf("%s from %s: %v", ev, s, err)
			case f.Current() != string(r.dst(s)):
				t.Errorf("%s from %s led to %s, table says %s", ev, s, f.Current(), r.dst(s))
			}
		}
	}
}

func TestEveryStateIsEnteredAndLeft(t *testing.T) {
	entered := map[State]bool{Bootstrapping: true}
	left := map[State]bool{}
	for _, e := range Table() {
		if e.From != e.To {
			entered[e.To] = true
			left[e.From] = true
		}
	}
	for _, s := range States() {
		if !entered[s] || !left[s] {
			t.Errorf("state %s: entered %v, left %v", s, entered[s], left[s])
		}
	}
}

func TestInTable(t *testing.T) {
	if !InTable(Transition{From: Steady, To: FailingOver, Event: EventPrimaryLost}) {
		t.Error("primary-lost Steady->FailingOver should be in the table")
	}
	if InTable(Transition{From: Steady, To: Rolling, Event: EventPrimaryLost}) {
		t.Error("primary-lost Steady->Rolling is not in the table")
	}
	if InTable(Transition{From: Restoring, To: FailingOver, Event: EventPrimaryLost}) {
		t.Error("Restoring is not pre-empted by primary-lost")
	}
}

// FSMs are reused between decisions: one left in the state the last fire took it to must
// not let the next decide from there. Every edge fires from its own source, and an event
// that is no edge from a state is refused there, whichever FSM fired before.
func TestReusedFSMsFireFromTheirDecisionsState(t *testing.T) {
	for round := 0; round < 3; round++ {
		for _, e := range Table() {
			to, taken, err := fireFrom(context.Background(), e.From, e.Event)
			if err != nil || !taken || to != e.To {
				t.Fatalf("%s from %s: got %s taken=%v err=%v, want %s", e.Event, e.From, to, taken, err, e.To)
			}
			for _, s := range States() {
				if edgeFrom(s, e.Event) {
					continue
				}
				if _, taken, _ := fireFrom(context.Background(), s, e.Event); taken {
					t.Fatalf("%s was taken from %s after a fire from %s", e.Event, s, e.From)
				}
			}
		}
	}
}

func edgeFrom(s State, ev Event) bool {
	for _, e := range Table() {
		if e.From == s && e.Event == ev {
			return true
		}
	}
	return false
}
