package replay

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Write prints the report step by step: one line per recorded transition and per decision
// that differed or could not be replayed; a run of observations that caused no transition
// and were decided the same again is one line, unless every is true. SEQ is the transition's
// sequence number; in parentheses, for observations, that of the last transition before them. It ends with the
// verdict: for a plain replay whether the machine decided every step as recorded, for a
// what-if the first divergence and how many there were.
func (r *Report) Write(w io.Writer, every bool) error {
	var b strings.Builder
	name := r.Cluster
	if name == "" {
		name = "the journal"
	}
	if r.WhatIf() {
		fmt.Fprintf(&b, "What-if replay of %s with %s: the machine runs on its own decisions, the recorded observations are the world.\n", name, overridesString(r.Overrides))
	} else {
		fmt.Fprintf(&b, "Replay of %s: every recorded decision taken again on the state the journal says was current.\n", name)
	}
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tRECORDED\tREPLAYED\tVERDICT")
	run := 0 // observations of the run being folded into one line
	var runFrom Step
	flush := func() {
		if run == 0 {
			return
		}
		noun := "observations"
		if run == 1 {
			noun = "observation"
		}
		fmt.Fprintf(tw, "(%d)\t%s\t%d %s, no transition\tno transition\t%s\n", runFrom.Seq, stamp(runFrom.Time), run, noun, Same)
		run = 0
	}
	for _, s := range r.Steps {
		if !every && s.Kind == KindObservation && s.Verdict == Same {
			if run == 0 {
				runFrom = s
			}
			run++
			continue
		}
		flush()
		recorded, replayed := s.Recorded.String(), s.Replayed.String()
		if s.Verdict == NotReplayable {
			replayed = "-"
			if s.Kind == KindGap {
				recorded = "-"
			}
		}
		seq := fmt.Sprint(s.Seq)
		if s.Kind == KindObservation {
			seq = "(" + seq + ")"
		}
		verdict := string(s.Verdict)
		if s.Detail != "" && s.Verdict != Same {
			// The last column is not aligned: a long explanation widens nothing.
			verdict += ": " + s.Detail
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", seq, stamp(s.Time), recorded, replayed, verdict)
	}
	flush()
	if err := tw.Flush(); err != nil {
		return err
	}
	if timings := r.Timings(); r.WhatIf() && len(timings) > 0 {
		fmt.Fprintf(&b, "When, from the first divergence on (recorded / with %s):\n", overridesString(r.Overrides))
		for _, t := range timings {
			rec, with := "not taken", "not taken"
			if !t.Recorded.IsZero() {
				rec = fmt.Sprintf("%s (seq %d)", stamp(t.Recorded), t.RecordedSeq)
			}
			if !t.Replayed.IsZero() {
				with = stamp(t.Replayed)
				if !t.Recorded.IsZero() {
					with += fmt.Sprintf(" (%+.3fs)", t.Replayed.Sub(t.Recorded).Seconds())
				}
			}
			fmt.Fprintf(&b, "  %s: %s / %s\n", t.Event, rec, with)
		}
	}
	total := len(r.Steps)
	switch {
	case total == 0:
		b.WriteString("The journal holds no record.\n")
	case r.WhatIf() && r.Differed == 0:
		fmt.Fprintf(&b, "With %s every one of %d replayed decisions is the same as recorded", overridesString(r.Overrides), r.Same)
	case r.WhatIf():
		f := r.FirstDifference()
		fmt.Fprintf(&b, "With %s %d of %d replayed decisions would have differed; the first at seq %d (%s): %s", overridesString(r.Overrides), r.Differed, r.Differed+r.Same, f.Seq, stamp(f.Time), f.Detail)
	case r.Differed == 0:
		fmt.Fprintf(&b, "Deterministic: all %d replayed decisions are the same as recorded", r.Same)
	default:
		f := r.FirstDifference()
		fmt.Fprintf(&b, "NOT DETERMINISTIC: %d of %d replayed decisions differ from the record; the first at seq %d (%s): %s", r.Differed, r.Differed+r.Same, f.Seq, stamp(f.Time), f.Detail)
	}
	if total > 0 {
		if r.NotReplayable > 0 {
			fmt.Fprintf(&b, " (%d of %d records not replayable: see above)", r.NotReplayable, total)
		}
		b.WriteString(".\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
