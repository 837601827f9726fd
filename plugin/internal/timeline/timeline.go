package timeline

import (
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// Transition is one state transition, from status.history or the journal.
type Transition struct {
	Seq     uint64
	Time    time.Time
	From    string
	To      string
	Event   string
	Reason  string
	Message string
	// Backfilled marks a journal record copied from status.history by an operator that had
	// not journaled the transition itself (what it observed is unknown).
	Backfilled bool
}

// FromHistory is the transition of a status.history entry.
func FromHistory(e v1beta1.HistoryEntry) Transition {
	seq := uint64(0)
	if e.Seq > 0 {
		seq = uint64(e.Seq)
	}
	return Transition{Seq: seq, Time: e.Time.Time, From: string(e.From), To: string(e.To), Event: e.Event, Reason: e.Reason, Message: e.Message}
}

// FromEntry is the transition of a journal entry; the journal keeps no reason because it is
// always the event's CamelCase form.
func FromEntry(e machine.Entry, backfilled bool) Transition {
	return Transition{Seq: e.Seq, Time: e.Time, From: string(e.From), To: string(e.To), Event: string(e.Event), Message: e.Message, Backfilled: backfilled}
}

// BackfilledMark follows the sequence number of a backfilled record; Footnote explains it.
const BackfilledMark = "*"

// Footnote explains BackfilledMark below a table that has one.
const Footnote = "* backfilled from status.history by an operator that had not journaled the transition: what it observed is unknown"

// Options say how times are shown.
type Options struct {
	// Age shows how long ago each transition was instead of its RFC 3339 time.
	Age bool
	// Now is the time ages are computed against.
	Now time.Time
}

// Table is a table of transitions.
type Table struct {
	t    *output.Table
	opts Options
	// backfilled tells whether the footnote is needed.
	backfilled bool
}

// NewTable starts a table of transitions with the columns SEQ, TIME (or AGE), TRANSITION,
// EVENT and MESSAGE.
func NewTable(opts Options) *Table {
	timeHeader := "TIME"
	if opts.Age {
		timeHeader = "AGE"
	}
	t := output.NewTable("SEQ", timeHeader, "TRANSITION", "EVENT", "MESSAGE")
	t.MinWidths(minWidths(opts.Age)...)
	return &Table{t: t, opts: opts}
}

// Add adds a row.
func (t *Table) Add(tr Transition) {
	seq := strconv.FormatUint(tr.Seq, 10)
	if tr.Backfilled {
		seq += BackfilledMark
		t.backfilled = true
	}
	when := output.Timestamp(tr.Time)
	if t.opts.Age {
		when = output.Age(t.opts.Now, tr.Time)
	}
	t.t.Row(seq, when, Arrow(tr.From, tr.To), tr.Event, messageCell(tr))
}

// Gap adds the line of the transitions from to to (inclusive) that cannot be shown, and
// why: "      ... 3 transitions not journaled (seq 1-3) ...".
func (t *Table) Gap(from, to uint64, why string) {
	if to < from {
		return
	}
	t.t.Span("      ... " + GapText(from, to, why) + " ...")
}

// GapText says that the transitions from to to (inclusive) are missing, and why:
// "3 transitions not journaled (seq 1-3)", "1 transition not journaled (seq 4)".
func GapText(from, to uint64, why string) string {
	if to <= from {
		return fmt.Sprintf("1 transition %s (seq %d)", why, from)
	}
	return fmt.Sprintf("%d transitions %s (seq %d-%d)", to-from+1, why, from, to)
}

// Len is the number of rows and gap lines.
func (t *Table) Len() int { return t.t.Len() }

// HasBackfilled tells whether a row is marked backfilled.
func (t *Table) HasBackfilled() bool { return t.backfilled }

// WriteTo writes the table with its header.
func (t *Table) WriteTo(w io.Writer) (int64, error) { return t.t.WriteTo(w) }

// WriteRowsTo writes the rows without the header, aligned with a table written before.
func (t *Table) WriteRowsTo(w io.Writer) (int64, error) { return t.t.WriteRowsTo(w) }

// Arrow is "From -> To"; the first transition of a cluster may have no From.
func Arrow(from, to string) string {
	if from == "" {
		from = "<start>"
	}
	return from + " -> " + to
}

// messageCell is the message. The reason is shown only when it says something the event
// does not: the operator sets it to the event's CamelCase form, which would repeat EVENT.
func messageCell(tr Transition) string {
	if tr.Reason == "" || tr.Reason == machine.Event(tr.Event).Reason() {
		return tr.Message
	}
	if tr.Message == "" {
		return tr.Reason
	}
	return tr.Reason + ": " + tr.Message
}

// minWidths are the widths of the longest sequence number, time, transition and event that
// the machine's table allows, so that rows printed at different times by --watch line up.
func minWidths(age bool) []int {
	transition, event := 0, 0
	for _, e := range machine.Table() {
		transition = max(transition, utf8.RuneCountInString(Arrow(string(e.From), string(e.To))))
		event = max(event, utf8.RuneCountInString(string(e.Event)))
	}
	when := len("2006-01-02T15:04:05Z")
	if age {
		when = len("10d23h")
	}
	return []int{len("99999"), when, transition, event}
}
