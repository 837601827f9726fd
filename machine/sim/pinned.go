package sim

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The pinned edge schedules (testdata/edges) take table edges that random exploration of the
// default topologies does not reach: each says why in its header and names the edges it pins
// with "# edge:" lines. -every-edge replays them beside the exploration and counts an edge as
// exercised when its schedule takes it with no violation, so an edge the table keeps for a
// case the generator cannot draw is still taken on every run, and a pinned schedule that stops
// taking its edge fails the run like an unexplored edge.

//go:embed testdata/edges/*.sched
var pinnedFiles embed.FS

// PinnedSchedule is one pinned edge schedule.
type PinnedSchedule struct {
	Name     string
	Topology string
	Edges    []string
	Steps    []Step
}

// PinnedSchedules reads the pinned edge schedules, sorted by name.
func PinnedSchedules() ([]PinnedSchedule, error) {
	names, err := fs.Glob(pinnedFiles, "testdata/edges/*.sched")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []PinnedSchedule
	for _, name := range names {
		text, err := pinnedFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		topo, steps, err := ReadSchedule(bytes.NewReader(text))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		p := PinnedSchedule{Name: name, Topology: topo, Steps: steps}
		sc := bufio.NewScanner(bytes.NewReader(text))
		for sc.Scan() {
			if e, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "# edge:"); ok {
				p.Edges = append(p.Edges, strings.TrimSpace(e))
			}
		}
		if len(p.Edges) == 0 {
			return nil, fmt.Errorf("%s: no \"# edge:\" line names the edges it pins", name)
		}
		out = append(out, p)
	}
	return out, nil
}

// PinnedEdges replays the pinned edge schedules and returns the edges they pin and took, each
// with the schedule that took it, and what went wrong: a violation, an edge pinned and not
// taken, an edge the table does not have, a schedule that does not read.
func PinnedEdges() (map[string]string, []string) {
	pinned, err := PinnedSchedules()
	if err != nil {
		return nil, []string{err.Error()}
	}
	return replayPinned(pinned)
}

// replayPinned is PinnedEdges for the schedules given.
func replayPinned(pinned []PinnedSchedule) (map[string]string, []string) {
	known := map[string]bool{}
	for _, e := range machine.Table() {
		known[edgeName(e.From, e.Event, e.To)] = true
	}
	taken := map[string]string{}
	var problems []string
	for _, p := range pinned {
		t, err := LookupTopology(p.Topology)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", p.Name, err))
			continue
		}
		res := Run(t, p.Steps, Options{})
		for _, v := range res.Violations {
			problems = append(problems, fmt.Sprintf("%s: %s", p.Name, v))
		}
		for _, e := range p.Edges {
			switch {
			case !known[e]:
				problems = append(problems, fmt.Sprintf("%s: %s is no edge of the table", p.Name, e))
			case res.Stats.Edges[e] == 0:
				problems = append(problems, fmt.Sprintf("%s: %s not taken", p.Name, e))
			case len(res.Violations) == 0:
				taken[e] = p.Name
			}
		}
	}
	return taken, problems
}
