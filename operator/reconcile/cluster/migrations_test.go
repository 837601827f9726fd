package cluster

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestARunOfMigrationsRunsSideBySide: the three migrations of a run go at once (each waits
// until all three have started, which sequential calls never would), and each result keeps
// its place. (Which actions of a run are skipped is the turn driver's: machine.Turn.)
func TestARunOfMigrationsRunsSideBySide(t *testing.T) {
	m := func(from string, slot int) machine.MigrateSlots {
		return machine.MigrateSlots{FromNode: from, ToNode: "s3-0", Slots: machine.SlotRange{Start: slot, End: slot}}
	}
	run := []machine.Action{m("s0-0", 1), m("s1-0", 2), m("s2-0", 3)}
	var started sync.WaitGroup
	started.Add(3)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	failure := errors.New("refused")
	got := runTogether(run, func(a machine.Action) error {
		m := a.(machine.MigrateSlots)
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
	if len(got) != 3 || got[0] != nil || !errors.Is(got[1], failure) || got[2] != nil {
		t.Fatalf("results %v, want 0 and 2 done, 1 failed", got)
	}
}
