package sim

import "fmt"

// trace is the readable history of a run: one line per step and per thing that happened.
type trace struct {
	lines []string
}

func (t *trace) note(tick int64, line string) {
	t.lines = append(t.lines, fmt.Sprintf("t=%-4d %s", tick, line))
}
