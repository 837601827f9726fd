package machine

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// turnWorld is a world of one decision: it records what the driver asks of it, in order.
type turnWorld struct {
	decision   Decision
	decided    []Action // what Decided answers (nil: the decision's actions)
	persistErr error
	fail       map[string]error // by action, what Do answers
	calls      []string
}

func (w *turnWorld) Observe() (Persisted, Observation, error) {
	w.calls = append(w.calls, "observe")
	return Persisted{State: Steady}, Observation{Time: time.Unix(100, 0)}, nil
}

func (w *turnWorld) Decide(Persisted, Observation) Decision {
	w.calls = append(w.calls, "decide")
	return w.decision
}

func (w *turnWorld) Decided(_ Observation, d Decision) []Action {
	w.calls = append(w.calls, "decided")
	if w.decided != nil {
		return w.decided
	}
	return d.Actions
}

func (w *turnWorld) Persist(Observation, Decision) error {
	w.calls = append(w.calls, "persist")
	return w.persistErr
}

func (w *turnWorld) Journal(Observation, Decision) { w.calls = append(w.calls, "journal") }
func (w *turnWorld) Waiting(why Wait)              { w.calls = append(w.calls, "waiting "+why.String()) }

func (w *turnWorld) Do(run []Action) []error {
	out := make([]error, len(run))
	for i, a := range run {
		w.calls = append(w.calls, "do "+a.String())
		out[i] = w.fail[a.String()]
	}
	return out
}

func (w *turnWorld) Skipped(pl Planned) {
	w.calls = append(w.calls, fmt.Sprintf("skipped %s (%d)", pl.Action, pl.Verdict))
}

func (w *turnWorld) Done(pl Planned, f ActionFailure, err error) {
	w.calls = append(w.calls, fmt.Sprintf("done %s failures=%d", pl.Action, f.Count))
}

func secondsBackOff(count int32) time.Duration { return time.Duration(count) * time.Second }

var (
	promote0 = Promote{Target: Target{Shard: 0, Node: "s0-1", RunID: "r1"}}
	replica0 = ReplicaOf{Target: Target{Shard: 0, Node: "s0-2"}, Primary: "s0-1", PrimaryIP: "10.0.0.2"}
	promote1 = Promote{Target: Target{Shard: 1, Node: "s1-1", RunID: "r2"}}
)

func transitionTo(s State, actions ...Action) Decision {
	return Decision{
		Transition: &Transition{Seq: 1, From: Steady, To: s, Event: EventPrimaryLost},
		Next:       Persisted{State: s, Seq: 1},
		Actions:    actions,
	}
}

func TestTurnStalePersistEndsTheTurn(t *testing.T) {
	w := &turnWorld{decision: transitionTo(FailingOver, promote0), persistErr: errors.New("conflict")}
	turn, err := StartTurn(w, TurnConfig{BackOff: secondsBackOff})
	if err == nil || turn != nil {
		t.Fatalf("a refused persist must end the turn, got turn %v, err %v", turn, err)
	}
	if want := []string{"observe", "decide", "decided", "persist"}; !reflect.DeepEqual(w.calls, want) {
		t.Fatalf("calls %q, want %q: nothing journaled, nothing done", w.calls, want)
	}
}

func TestTurnActsOnlyOnceNextIsPersisted(t *testing.T) {
	// The world changes the plan (the simulator's sabotage does): Decided's answer is what runs.
	w := &turnWorld{decision: transitionTo(FailingOver, promote0, replica0), decided: []Action{promote0}}
	turn, err := StartTurn(w, TurnConfig{BackOff: secondsBackOff})
	if err != nil {
		t.Fatal(err)
	}
	turn.Act(w)
	want := []string{"observe", "decide", "decided", "persist", "journal", "do " + promote0.String(), "done " + promote0.String() + " failures=0"}
	if !reflect.DeepEqual(w.calls, want) {
		t.Fatalf("calls %q, want %q", w.calls, want)
	}
	if turn.Settled() || !turn.Acted() {
		t.Fatal("a turn with a transition and an action is not settled")
	}
}

func TestTurnFailuresBackOffInTheNextTurn(t *testing.T) {
	boom := errors.New("boom")
	w := &turnWorld{decision: Decision{Next: Persisted{State: Steady}, Actions: []Action{promote0, replica0, promote1}}, fail: map[string]error{promote0.String(): boom}}
	at := time.Unix(100, 0)
	first, err := StartTurn(w, TurnConfig{BackOff: secondsBackOff, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	first.Act(w)
	// The replica-of depends on the failed promotion of its shard; the other shard's goes on.
	want := []string{"observe", "decide", "decided", "journal",
		"do " + promote0.String(), "done " + promote0.String() + " failures=1",
		fmt.Sprintf("skipped %s (%d)", replica0, SkipBlocked),
		"do " + promote1.String(), "done " + promote1.String() + " failures=0"}
	if !reflect.DeepEqual(w.calls, want) {
		t.Fatalf("first turn: calls %q, want %q", w.calls, want)
	}
	failing := first.Failing()
	if len(failing) != 1 || failing[0].Action != promote0.String() || failing[0].RetryAt != at.Add(time.Second) {
		t.Fatalf("failure records %+v, want promote0's, retry in 1 s", failing)
	}

	// Half a second later the promotion backs off (and what depends on it with it).
	w.calls = nil
	second, err := StartTurn(w, TurnConfig{Prior: failing, BackOff: secondsBackOff, Now: func() time.Time { return at.Add(time.Second / 2) }})
	if err != nil {
		t.Fatal(err)
	}
	second.Act(w)
	want = []string{"observe", "decide", "decided", "journal",
		fmt.Sprintf("skipped %s (%d)", promote0, SkipBackingOff),
		fmt.Sprintf("skipped %s (%d)", replica0, SkipBlocked),
		"do " + promote1.String(), "done " + promote1.String() + " failures=0"}
	if !reflect.DeepEqual(w.calls, want) {
		t.Fatalf("second turn: calls %q, want %q", w.calls, want)
	}
	if kept := second.Failing(); len(kept) != 1 || kept[0] != failing[0] {
		t.Fatalf("a skipped action keeps its record: %+v", kept)
	}

	// Once the back-off has passed it is tried again, and a second failure counts 2.
	w.calls = nil
	third, err := StartTurn(w, TurnConfig{Prior: second.Failing(), BackOff: secondsBackOff, Now: func() time.Time { return at.Add(time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	third.Act(w)
	if f := third.Failing(); len(f) != 1 || f[0].Count != 2 || f[0].RetryAt != at.Add(3*time.Second) {
		t.Fatalf("third turn's records %+v, want promote0 failing twice, retry 2 s later", f)
	}
}

func TestTurnSettledAndWaiting(t *testing.T) {
	w := &turnWorld{decision: Decision{Next: Persisted{State: Steady}}}
	turn, err := StartTurn(w, TurnConfig{BackOff: secondsBackOff})
	if err != nil || !turn.Settled() || turn.Step(w) {
		t.Fatalf("nothing decided: settled, nothing to step (err %v)", err)
	}
	w = &turnWorld{decision: Decision{Next: Persisted{State: Steady}, Waiting: Wait{Kind: WaitNoNodeAnswers}}}
	turn, err = StartTurn(w, TurnConfig{BackOff: secondsBackOff})
	if err != nil || turn.Settled() {
		t.Fatalf("a turn that waits is not settled (err %v)", err)
	}
	if last := w.calls[len(w.calls)-1]; last != "waiting shard 0: no node answers" {
		t.Fatalf("the wait is reported: calls %q", w.calls)
	}
}

// pendingActor leaves every action in flight.
type pendingActor struct{ turnWorld }

func (a *pendingActor) Do(run []Action) []error {
	out := make([]error, len(run))
	for i := range out {
		out[i] = ErrPending
	}
	return out
}

func TestTurnPendingActionIsRecordedWhenFinished(t *testing.T) {
	w := &turnWorld{decision: Decision{Next: Persisted{State: Steady}, Actions: []Action{promote0}}}
	turn, err := StartTurn(w, TurnConfig{BackOff: secondsBackOff})
	if err != nil {
		t.Fatal(err)
	}
	a := &pendingActor{}
	if !turn.Step(a) || len(a.calls) != 0 || len(turn.Failing()) != 0 {
		t.Fatalf("a pending action has no outcome yet: calls %q", a.calls)
	}
	if f := turn.Finish(promote0, errors.New("late")); f.Count != 1 || len(turn.Failing()) != 1 {
		t.Fatalf("its late failure is recorded: %+v", f)
	}
}

func TestTurnRunsCarryOutMigrationsTogether(t *testing.T) {
	m1 := MigrateSlots{From: 0, To: 2, FromNode: "s0-0", ToNode: "s2-0", Slots: SlotRange{Start: 0, End: 9}}
	m2 := MigrateSlots{From: 1, To: 2, FromNode: "s1-0", ToNode: "s2-0", Slots: SlotRange{Start: 10, End: 19}}
	w := &turnWorld{decision: Decision{Next: Persisted{State: Resharding}, Actions: []Action{m1, m2, promote0}}}
	turn, err := StartTurn(w, TurnConfig{BackOff: secondsBackOff, Runs: true})
	if err != nil {
		t.Fatal(err)
	}
	w.calls = nil
	var runs [][]Action
	a := &runRecorder{turnWorld: w, runs: &runs}
	turn.Act(a)
	if len(runs) != 2 || len(runs[0]) != 2 || len(runs[1]) != 1 {
		t.Fatalf("runs %v, want both migrations at once, then the promotion", runs)
	}
}

type runRecorder struct {
	*turnWorld
	runs *[][]Action
}

func (r *runRecorder) Do(run []Action) []error {
	*r.runs = append(*r.runs, run)
	return r.turnWorld.Do(run)
}
