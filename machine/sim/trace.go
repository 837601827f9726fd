package sim

import "fmt"

// trace is the readable history of a run: one line per step and per thing that happened.
// A line that repeats the previous one (a reconcile that keeps waiting for the same thing)
// is counted instead of printed again.
type trace struct {
	lines   []string
	last    string
	repeats int
	// quiet drops the lines of idle steps (the convergence phase steps the operator and the
	// client every tick; only what they do is worth reading).
	quiet bool
}

func (t *trace) note(tick int64, line string) {
	if line == t.last {
		t.repeats++
		return
	}
	t.flush()
	t.last = line
	t.lines = append(t.lines, fmt.Sprintf("t=%-4d %s", tick, line))
}

func (t *trace) flush() {
	if t.repeats > 0 {
		t.lines = append(t.lines, fmt.Sprintf("       (the line above repeated %d more times)", t.repeats))
		t.repeats = 0
	}
}

// Lines returns the history.
func (t *trace) Lines() []string {
	t.flush()
	return t.lines
}
