package sim

import (
	"strings"
	"testing"
)

// Schedules that take the table edges random exploration of the default topologies does not
// reach (testdata/edges): each must still take the edges its "# edge:" lines pin, with no
// violation, whatever the generator's draws.
func TestRareEdgesStayReachable(t *testing.T) {
	pinned, err := PinnedSchedules()
	if err != nil {
		t.Fatal(err)
	}
	if len(pinned) == 0 {
		t.Fatal("no pinned edge schedules")
	}
	taken, problems := PinnedEdges()
	for _, p := range problems {
		t.Error(p)
	}
	for _, p := range pinned {
		for _, e := range p.Edges {
			if taken[e] != p.Name {
				t.Errorf("%s: %s not counted as taken", p.Name, e)
			}
		}
	}
}

// An edge a pinned schedule names counts only when the table has it and the schedule takes it.
func TestPinnedEdgesCountOnlyEdgesTaken(t *testing.T) {
	_, steps, err := ReadSchedule(strings.NewReader("operator\noperator\n"))
	if err != nil {
		t.Fatal(err)
	}
	taken, problems := replayPinned([]PinnedSchedule{{
		Name: "bootstrap", Topology: "replication", Steps: steps,
		Edges: []string{"Bootstrapping --bootstrap-complete--> Steady", "Steady --teleport--> Steady", "Resharding --deposed-resync--> Resharding"},
	}})
	if taken["Bootstrapping --bootstrap-complete--> Steady"] != "bootstrap" || len(taken) != 1 {
		t.Errorf("taken: %v", taken)
	}
	want := []string{"bootstrap: Steady --teleport--> Steady is no edge of the table", "bootstrap: Resharding --deposed-resync--> Resharding not taken"}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems: %q, want %q", problems, want)
	}
}
