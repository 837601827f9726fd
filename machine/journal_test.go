package machine

import (
	"reflect"
	"strings"
	"testing"
)

// journalOf drives a cluster through bootstrap, a failover and back, and journals every
// transition as the operator would.
func journalOf(t *testing.T) ([]Entry, Persisted) {
	t.Helper()
	spec := testSpec(2)
	p0 := node(0, RolePrimary, "h1", 0)
	p0.Valkey.WritesFenced, p0.Valkey.SyncFenced = true, false
	steps := []Observation{
		obsAt(1, spec, p0, replica(1, 0), replica(2, 0)),
		obsAt(2, spec, unreachable(primary(3), 3), replica(1, 3), replica(2, 2)),
		obsAt(3, spec, unreachable(primary(3), 4), detached(replica(1, 3)), detached(replica(2, 2))),
	}
	var entries []Entry
	p := Persisted{}
	for _, obs := range steps {
		d := Decide(p, obs)
		if e, ok := EntryFor(d, obs); ok {
			entries = append(entries, e)
		}
		p = d.Next
	}
	if len(entries) != 3 {
		t.Fatalf("want 3 transitions (bootstrap, primary-lost, candidate-elected), got %d", len(entries))
	}
	return entries, p
}

func TestFoldRebuildsStateAndHistory(t *testing.T) {
	entries, live := journalOf(t)
	f, err := Fold(entries)
	if err != nil {
		t.Fatal(err)
	}
	if f.State.State != live.State || f.State.Seq != live.Seq || !reflect.DeepEqual(f.State.Shards[0], live.Shards[0]) || f.State.Op.Election.Candidate != live.Op.Election.Candidate {
		t.Fatalf("fold = %+v, live = %+v", f.State, live)
	}
	if len(f.Records) != 3 || f.Records[2].Event != EventCandidateElected || f.Records[2].Reason != "CandidateElected" {
		t.Fatalf("history = %+v", f.Records)
	}
	if h := f.History(2); len(h) != 2 || h[0].Seq != 2 || h[1].Seq != 3 {
		t.Fatalf("bounded view = %+v", h)
	}
}

func TestFoldRejectsABrokenJournal(t *testing.T) {
	entries, _ := journalOf(t)
	broken := map[string]func([]Entry) []Entry{
		"gap": func(e []Entry) []Entry { return append(e[:1:1], e[2:]...) },
		"edge not in the table": func(e []Entry) []Entry {
			e[1].Event = EventRolloutComplete
			return e
		},
		"wrong destination": func(e []Entry) []Entry {
			e[1].To = Rolling
			return e
		},
		"does not start where the previous ended": func(e []Entry) []Entry {
			e[2].From = Steady
			return e
		},
	}
	for name, breakIt := range broken {
		cp := append([]Entry(nil), entries...)
		if _, err := Fold(breakIt(cp)); err == nil || !strings.Contains(err.Error(), "journal") {
			t.Errorf("%s: Fold accepted it (err %v)", name, err)
		}
	}
}

func TestHistoryIsBoundedAndGapFree(t *testing.T) {
	var h []HistoryRecord
	var err error
	for seq := uint64(1); seq <= 5; seq++ {
		h, err = AppendHistory(h, HistoryRecord{Seq: seq, From: Steady, To: Steady, Event: EventPrimaryHandedOver}, 3)
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(h) != 3 || h[0].Seq != 3 || h[2].Seq != 5 {
		t.Fatalf("want the last 3 records, got %+v", h)
	}
	if err := CheckHistory(h, 3, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := AppendHistory(h, HistoryRecord{Seq: 7}, 3); err == nil {
		t.Fatal("a gap must be refused")
	}
	if err := CheckHistory(h, 2, 5); err == nil {
		t.Fatal("over the limit must be reported")
	}
	if err := CheckHistory(h, 3, 6); err == nil {
		t.Fatal("a history that does not end at the state's sequence must be reported")
	}
	bad := append([]HistoryRecord(nil), h...)
	bad[1].Event = EventRolloutNeeded
	if err := CheckHistory(bad, 3, 5); err == nil {
		t.Fatal("an edge not in the table must be reported")
	}
}

func TestExactlyOneStateConditionIsTrue(t *testing.T) {
	conds := InitialConditions(at(0))
	if err := CheckConditions(conds, Bootstrapping); err != nil {
		t.Fatal(err)
	}
	conds = ApplyTransition(conds, Transition{From: Bootstrapping, To: Steady, Event: EventBootstrapComplete, Time: at(5)})
	if err := CheckConditions(conds, Steady); err != nil {
		t.Fatal(err)
	}
	steady, _ := findCondition(conds, string(Steady))
	if steady.Reason != "BootstrapComplete" || !steady.LastTransitionTime.Equal(at(5)) {
		t.Fatalf("Steady condition = %+v", steady)
	}
	conds = ApplyTransition(conds, Transition{From: Steady, To: Steady, Event: EventPrimaryHandedOver, Time: at(9)})
	steady, _ = findCondition(conds, string(Steady))
	if !steady.LastTransitionTime.Equal(at(5)) || steady.Reason != "PrimaryHandedOver" {
		t.Fatalf("a self-loop keeps lastTransitionTime and updates the reason: %+v", steady)
	}
	observed := MergeObserved(conds, []Condition{{Type: ConditionReady, Status: ConditionTrue, Reason: "PrimaryServing"}}, at(9))
	if kept := ApplyTransition(observed, Transition{From: Steady, To: Rolling, Event: EventRolloutNeeded, Time: at(10)}); len(kept) != len(observed) {
		t.Fatalf("a transition dropped the observed conditions: %+v", kept)
	} else if ready, _ := findCondition(kept, ConditionReady); ready.Status != ConditionTrue || !ready.LastTransitionTime.Equal(at(9)) {
		t.Fatalf("a transition changed Ready, which only observations compute: %+v", ready)
	}
	broken := append([]Condition(nil), conds...)
	for i := range broken {
		if broken[i].Type == string(Rolling) {
			broken[i].Status = ConditionTrue
		}
	}
	if err := CheckConditions(broken, Steady); err == nil {
		t.Fatal("two True state conditions must be reported")
	}
}
