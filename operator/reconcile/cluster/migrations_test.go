package cluster

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestARunOfMigrationsRunsSideBySide: the three migrations of a run that the plan says to run
// go at once (each waits until all three have started, which sequential calls never would),
// and a skipped one is not carried out and has no result.
func TestARunOfMigrationsRunsSideBySide(t *testing.T) {
	m := func(from string, slot int) machine.MigrateSlots {
		return machine.MigrateSlots{FromNode: from, ToNode: "s3-0", Slots: machine.SlotRange{Start: slot, End: slot}}
	}
	run := []machine.Planned{
		{Action: m("s0-0", 1), Verdict: machine.Run},
		{Action: m("s1-0", 2), Verdict: machine.Run},
		{Action: m("s2-0", 3), Verdict: machine.Run},
		{Action: m("s4-0", 4), Verdict: machine.SkipBackingOff},
	}
	var started sync.WaitGroup
	started.Add(3)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	failure := errors.New("refused")
	got := runTogether(run, func(a machine.Action) error {
		m := a.(machine.MigrateSlots)
		if m.FromNode == "s4-0" {
			t.Errorf("%s ran although the plan skips it", a)
			return nil
		}
		started.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			t.Errorf("%s waited 10 s for the others: the migrations do not run side by side", a)
		}
		if m.FromNode == "s1-0" {
			return failure
		}
		return nil
	})
	if len(got) != 4 || got[0] != nil || !errors.Is(got[1], failure) || got[2] != nil || got[3] != nil {
		t.Fatalf("results %v, want 0 and 2 done, 1 failed, 3 (skipped) without a result", got)
	}
}
