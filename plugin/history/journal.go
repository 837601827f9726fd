package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/timeline"
)

// Journal is a cluster's journal: the records of every page the operator answered.
//
// Its records mirror journal.Record of operator/journal field for field (a test checks it
// against the real type) rather than import it: that package is the operator's and brings
// bbolt with it, and the plugin depends on the API and the machine only.
type Journal struct {
	// Cluster is the journal's key for the cluster, namespace/name/uid.
	Cluster string          `json:"cluster"`
	Records []JournalRecord `json:"records"`
}

// JournalRecord is one record of the journal.
type JournalRecord struct {
	// Kind is "transition" (journaled as it happened), "backfilled" (copied from
	// status.history by a leader that had not journaled it) or "gap" (in neither).
	Kind  string        `json:"kind"`
	Entry machine.Entry `json:"entry,omitzero"`
	// GapFrom and GapTo are the first and last sequence numbers a gap stands for.
	GapFrom uint64 `json:"gapFrom,omitempty"`
	GapTo   uint64 `json:"gapTo,omitempty"`
	// Observed is an observation that caused no transition (kind "observation"), kept for
	// replays (--replay).
	Observed *machine.JournaledObservation `json:"observed,omitempty"`
	// Recorded is when the operator wrote the record.
	Recorded time.Time `json:"recorded"`
}

// The kinds of journal records.
const (
	KindTransition  = "transition"
	KindBackfilled  = "backfilled"
	KindGap         = "gap"
	KindObservation = "observation"
)

// PrintJournal writes a journal: a table in text, else the operator's document as received
// (re-indented), so that fields this plugin does not know survive.
func PrintJournal(w io.Writer, raw []byte, j *Journal, opts Options) error {
	switch opts.Format {
	case output.JSON, output.YAML:
		dec := json.NewDecoder(bytes.NewReader(raw))
		// Sequence numbers are uint64: as float64 they would lose digits past 2^53.
		dec.UseNumber()
		var doc any
		if err := dec.Decode(&doc); err != nil {
			return err
		}
		return output.Encode(w, doc, opts.Format)
	}
	if len(j.Records) == 0 {
		_, err := fmt.Fprintf(w, "The operator's journal has no record of %s.\n", j.Cluster)
		return err
	}
	t := timeline.NewTable(timeline.Options{Age: opts.Age, Now: opts.Now()})
	observations := 0
	for _, r := range j.Records {
		switch r.Kind {
		case KindObservation:
			// Kept for replays, not transitions: counted below the table.
			observations++
		case KindTransition:
			t.Add(timeline.FromEntry(r.Entry, false))
		case KindBackfilled:
			t.Add(timeline.FromEntry(r.Entry, true))
		case KindGap:
			t.Gap(r.GapFrom, r.GapTo, "not journaled")
		default:
			// A newer operator's kind: say so rather than guess what it means.
			t.Gap(r.Entry.Seq, r.Entry.Seq, fmt.Sprintf("in a record of unknown kind %q", r.Kind))
		}
	}
	if _, err := t.WriteTo(w); err != nil {
		return err
	}
	if observations > 0 {
		noun := "observations"
		if observations == 1 {
			noun = "observation"
		}
		if _, err := fmt.Fprintf(w, "(and %d %s that caused no transition, kept for --replay)\n", observations, noun); err != nil {
			return err
		}
	}
	if t.HasBackfilled() {
		_, err := fmt.Fprintln(w, timeline.Footnote)
		return err
	}
	return nil
}
