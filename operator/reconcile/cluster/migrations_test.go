package cluster

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestARunOfMigrationsRunsSideBySide: the three migrations of a step run at once (each waits
// until all three have started, which sequential calls never would), the action before the run
// is not part of it, and a skipped one is left out of the results for act to decide.
func TestARunOfMigrationsRunsSideBySide(t *testing.T) {
	actions := []machine.Action{
		machine.OpenWrites{Node: "s0-0"},
		machine.MigrateSlots{FromNode: "s0-0", ToNode: "s3-0", Slots: machine.SlotRange{Start: 1, End: 1}},
		machine.MigrateSlots{FromNode: "s1-0", ToNode: "s3-0", Slots: machine.SlotRange{Start: 2, End: 2}},
		machine.MigrateSlots{FromNode: "s2-0", ToNode: "s3-0", Slots: machine.SlotRange{Start: 3, End: 3}},
		machine.MigrateSlots{FromNode: "s4-0", ToNode: "s3-0", Slots: machine.SlotRange{Start: 4, End: 4}},
		machine.RemoveNode{Node: "s4-1"},
	}
	var started sync.WaitGroup
	started.Add(3)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	failure := errors.New("refused")
	got := migrationsTogether(actions, 1, func(a machine.Action) error {
		m := a.(machine.MigrateSlots)
		if m.FromNode == "s4-0" {
			return errSkipped
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
	if len(got) != 3 || got[1] != nil || !errors.Is(got[2], failure) || got[3] != nil {
		t.Fatalf("results %v, want indexes 1 and 3 done, 2 failed, 4 (skipped) absent", got)
	}
	if migrationsTogether(actions, 0, func(machine.Action) error { t.Fatal("ran an action that is no migration"); return nil }) != nil {
		t.Fatal("a run starting at a non-migration")
	}
}
