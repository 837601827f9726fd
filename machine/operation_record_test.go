package machine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// recordedOperations is one operation of each kind the machine records, in the state it is
// recorded in, with the fields its guards set.
func recordedOperations() map[string]Persisted {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	lost := History{ID: "h-lost", PrevID: "h-before", PrevEnd: 1200}
	return map[string]Persisted{
		"failover": {State: FailingOver, Op: Operation{
			Election: Election{Shard: 1, Lost: "c-s1-0", LostRunID: "run-0", LostHistory: lost, Writer: "c-s1-0", WriterRunID: "run-0", Candidate: "c-s1-1", Unpromoted: true, ElectedAt: at, ElectedClock: "clock-a", FenceFrom: at.Add(-time.Second), KnownFenced: true, Preempted: Rolling},
			HandOver: HandOverMark{Shard: 1, To: "c-s1-2"},
		}},
		"failover-reseed": {State: FailingOver, Op: Operation{Election: Election{Shard: 0, Lost: "c-0", LostRunID: "run-0", Writer: "c-0", WriterRunID: "run-0", Candidate: "c-1", ElectedAt: at, ElectedClock: "clock-a", Reseed: true}}},
		"switchover": {State: FailingOver, Op: Operation{
			Election:   Election{Shard: 2, Lost: "c-s2-0", LostRunID: "run-0", LostHistory: lost, Planned: true},
			Switchover: SwitchoverGoal{To: "c-s2-1"}, HandOver: HandOverMark{Shard: 2, To: "c-s2-1"},
		}},
		"primary-leaving": {State: FailingOver, Op: Operation{
			Election:   Election{Shard: 0, Lost: "c-0", LostRunID: "run-0", LostHistory: lost, Planned: true},
			Switchover: SwitchoverGoal{To: "c-1", Leaving: true}, HandOver: HandOverMark{Shard: 0, To: "c-1"},
		}},
		"scale-down-hand-over": {State: FailingOver, Op: Operation{
			Election:   Election{Shard: 0, Lost: "c-2", LostRunID: "run-2", LostHistory: lost, Planned: true},
			Switchover: SwitchoverGoal{To: "c-0", Pods: 2}, HandOver: HandOverMark{Shard: 0, To: "c-0"},
		}},
		"rolling":              {State: Rolling, Op: Operation{Roll: Roll{Revision: "rev-2"}, HandOver: HandOverMark{Shard: 1, To: "c-s1-1"}}},
		"resharding":           {State: Resharding, Op: Operation{Reshard: Reshard{Shards: 4}}},
		"restore":              {State: Restoring, Op: Operation{Restore: Restore{Request: "backup/nightly", Snapshot: "s3://b/ns/c/nightly", GiveBack: true}}},
		"restore-at-bootstrap": {State: Restoring, Op: Operation{Restore: Restore{Request: "backup/nightly", Snapshot: "s3://b/ns/c/nightly"}}},
		"hibernated":           {State: Hibernated, Op: Operation{Hibernation: Hibernation{From: "c-s0-0 - c-s2-1"}}},
		"waking":               {State: Bootstrapping, Op: Operation{Hibernation: Hibernation{Wake: true, From: "c-s0-0 - c-s2-1"}}},
		"none":                 {State: Steady},
	}
}

// A journal entry written while Operation was one flat set of fields (testdata/
// journal-operations, written by that version) reads back as the same operation, so that old
// journals still replay; and every kind survives its flat form and today's JSON.
func TestEveryOperationKindReadsBackFromItsRecords(t *testing.T) {
	for kind, want := range recordedOperations() {
		raw, err := os.ReadFile(filepath.Join("testdata", "journal-operations", kind+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var old Entry
		if err := json.Unmarshal(raw, &old); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if old.After.State != want.State || !reflect.DeepEqual(old.After.Op, want.Op) {
			t.Errorf("%s: the flat journal entry reads back as\n%+v\nwant\n%+v", kind, old.After.Op, want.Op)
		}
		if got := want.Op.Record().Operation(want.State); !reflect.DeepEqual(got, want.Op) {
			t.Errorf("%s: the flat record reads back as\n%+v\nwant\n%+v", kind, got, want.Op)
		}
		data, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var back Persisted
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Op, want.Op) {
			t.Errorf("%s: today's JSON reads back as\n%+v\nwant\n%+v", kind, back.Op, want.Op)
		}
	}
}

// A failover the machine took over in the Sentinel topology (a kind that came after the flat
// journal entries) keeps its mark through the flat record and the JSON.
func TestATakenOverFailoverReadsBackFromItsRecord(t *testing.T) {
	want := Operation{Election: Election{Shard: 0, Lost: "c-0", LostRunID: "run-0", Writer: "c-0", WriterRunID: "run-0", Candidate: "c-1", TakenOver: true}}
	if got := want.Record().Operation(FailingOver); !reflect.DeepEqual(got, want) {
		t.Fatalf("the flat record reads back as\n%+v\nwant\n%+v", got, want)
	}
	data, err := json.Marshal(Persisted{State: FailingOver, Op: want})
	if err != nil {
		t.Fatal(err)
	}
	var back Persisted
	if err := json.Unmarshal(data, &back); err != nil || !back.Op.Election.TakenOver {
		t.Fatalf("the JSON reads back without the mark: %+v (%v)", back.Op.Election, err)
	}
}

// A rollout's hand-over in the Sentinel topology (roll-hand-over) keeps its goal through the
// flat record the status keeps: read back without it, it was a switchover nobody requested,
// abandoned at once (seen on the real cluster, in a loop).
func TestARolloutHandOverReadsBackFromItsRecord(t *testing.T) {
	want := Operation{
		Election:   Election{Shard: 0, Lost: "c-0", LostRunID: "run-0", Planned: true},
		Switchover: SwitchoverGoal{To: "c-1", Rollout: true},
		HandOver:   HandOverMark{Shard: 0, To: "c-1"},
	}
	got := want.Record().Operation(FailingOver)
	if !reflect.DeepEqual(got, want) || goalOf(got) != GoalRollout {
		t.Fatalf("the flat record reads back as\n%+v\nwant\n%+v", got, want)
	}
}
