package machine

import (
	"errors"
	"testing"
	"time"
)

var planNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func doubling(count int32) time.Duration { return time.Duration(1<<(count-1)) * time.Second }

// drive runs a plan to its end, failing the actions named in fail, and returns each action's
// verdict by its String().
func drive(p *ActPlan, fail map[string]bool) map[string]Verdict {
	out := map[string]Verdict{}
	for {
		pl, ok := p.Next()
		if !ok {
			return out
		}
		out[pl.Action.String()] = pl.Verdict
		if pl.Verdict == Run {
			var err error
			if fail[pl.Action.String()] {
				err = errors.New("refused")
			}
			p.Done(pl.Action, err)
		}
	}
}

func TestActPlanSkipsOnlyWhatDependsOnAFailure(t *testing.T) {
	actions := []Action{
		ReplicaOf{Target: Target{Node: "n1"}, Primary: "n0"},
		Detach{Target: Target{Node: "n1"}},
		Detach{Target: Target{Node: "n2"}},
		ExpandVolumes{Nodes: []string{"n1"}},
	}
	p := NewActPlan(actions, nil, planNow, doubling)
	got := drive(p, map[string]bool{actions[0].String(): true})
	want := map[string]Verdict{actions[0].String(): Run, actions[1].String(): SkipBlocked, actions[2].String(): Run, actions[3].String(): Run}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: verdict %d, want %d", k, got[k], v)
		}
	}
	f := p.Failing()
	if len(f) != 1 || f[0].Action != actions[0].String() || f[0].Count != 1 || !f[0].RetryAt.Equal(planNow.Add(time.Second)) {
		t.Fatalf("failing %+v, want the replica-of once, retried after one second", f)
	}
}

func TestActPlanBacksOffAndCountsFailuresInARow(t *testing.T) {
	a := Promote{Target: Target{Node: "n1"}}
	prior := []ActionFailure{{Action: a.String(), Count: 2, LastError: "refused", RetryAt: planNow.Add(time.Second)}}

	early := NewActPlan([]Action{a, Detach{Target: Target{Node: "n1"}}}, prior, planNow, doubling)
	if got := drive(early, nil); got[a.String()] != SkipBackingOff || got["detach n1"] != SkipBlocked {
		t.Fatalf("before its retry time: %v, want the promote backing off and what involves its node skipped", got)
	}
	if f := early.Failing(); len(f) != 1 || f[0] != prior[0] {
		t.Fatalf("a skipped action keeps its record unchanged: %+v", f)
	}

	late := NewActPlan([]Action{a}, prior, planNow.Add(time.Second), doubling)
	drive(late, map[string]bool{a.String(): true})
	if f := late.Failing(); len(f) != 1 || f[0].Count != 3 || !f[0].RetryAt.Equal(planNow.Add(5*time.Second)) {
		t.Fatalf("third failure in a row: %+v, want count 3 and a four-second back-off", f)
	}

	ok := NewActPlan([]Action{a}, prior, planNow.Add(time.Second), doubling)
	drive(ok, nil)
	if f := ok.Failing(); len(f) != 0 {
		t.Fatalf("an action that succeeded keeps no record: %+v", f)
	}
}

func TestActPlanAFailedFenceSkipsTheRest(t *testing.T) {
	actions := []Action{Fence{Target: Target{Node: "n0"}}, Promote{Target: Target{Node: "n1"}}, ExpandVolumes{Nodes: []string{"n2"}}}
	got := drive(NewActPlan(actions, nil, planNow, doubling), map[string]bool{"fence n0": true})
	if got["promote n1"] != SkipBlocked {
		t.Fatalf("a promotion after a failed fence must be skipped: %v", got)
	}
}

func TestActPlanRunsSlotMigrationsTogether(t *testing.T) {
	m1 := MigrateSlots{From: 0, To: 2, FromNode: "a", ToNode: "c", Slots: SlotRange{Start: 0, End: 9}}
	m2 := MigrateSlots{From: 1, To: 2, FromNode: "b", ToNode: "c", Slots: SlotRange{Start: 10, End: 19}}
	prior := []ActionFailure{{Action: m2.String(), Count: 1, RetryAt: planNow.Add(time.Minute)}}
	p := NewActPlan([]Action{Detach{Target: Target{Node: "x"}}, m1, m2, Detach{Target: Target{Node: "y"}}}, prior, planNow, doubling)
	if run := p.NextRun(); len(run) != 1 {
		t.Fatalf("a non-migration runs alone: %d", len(run))
	}
	run := p.NextRun()
	if len(run) != 2 || run[0].Verdict != Run || run[1].Verdict != SkipBackingOff {
		t.Fatalf("the migration run: %+v, want both migrations, the second backing off", run)
	}
	p.Done(run[0].Action, errors.New("busy"))
	if last := p.NextRun(); len(last) != 1 || last[0].Verdict != Run {
		t.Fatalf("an action on other nodes after failed migrations runs: %+v", last)
	}
	if p.NextRun() != nil {
		t.Fatal("the plan should be done")
	}
}
