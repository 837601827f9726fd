package machine

import (
	"fmt"
	"time"
)

// HistoryRecord is one transition as shown to users in status.history and by
// `kubectl valkey history`.
type HistoryRecord struct {
	Seq     uint64
	From    State
	To      State
	Event   Event
	Reason  string
	Message string
	// Time is supplied by the caller (the observation time of the transition).
	Time time.Time
}

// DefaultHistoryLimit is how many records status.history keeps.
const DefaultHistoryLimit = 20

// RecordOf turns a transition into its history record.
func RecordOf(t Transition) HistoryRecord {
	return HistoryRecord{Seq: t.Seq, From: t.From, To: t.To, Event: t.Event, Reason: t.Reason(), Message: t.Message, Time: t.Time}
}

// AppendHistory appends r and keeps the newest limit records (newest last). It refuses a
// record whose sequence does not follow the last one: the bounded history must stay
// gap-free so that users and the journal backfill can tell nothing is missing in between.
func AppendHistory(h []HistoryRecord, r HistoryRecord, limit int) ([]HistoryRecord, error) {
	if n := len(h); n > 0 && r.Seq != h[n-1].Seq+1 {
		return h, fmt.Errorf("history: record %d does not follow %d", r.Seq, h[n-1].Seq)
	}
	out := append(append([]HistoryRecord(nil), h...), r)
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// CheckHistory verifies the shape status.history must have: at most limit records, sequence
// numbers increasing by one, each record's From equal to the previous To, each edge in the
// table, and the last record at seq.
func CheckHistory(h []HistoryRecord, limit int, seq uint64) error {
	if limit > 0 && len(h) > limit {
		return fmt.Errorf("history has %d records, limit %d", len(h), limit)
	}
	for i, r := range h {
		if !InTable(Transition{From: r.From, To: r.To, Event: r.Event}) {
			return fmt.Errorf("history record %d: %s --%s--> %s is not in the table", r.Seq, r.From, r.Event, r.To)
		}
		if i == 0 {
			continue
		}
		prev := h[i-1]
		if r.Seq != prev.Seq+1 {
			return fmt.Errorf("history gap between %d and %d", prev.Seq, r.Seq)
		}
		if r.From != prev.To {
			return fmt.Errorf("history record %d starts in %s but %d ended in %s", r.Seq, r.From, prev.Seq, prev.To)
		}
	}
	if n := len(h); n > 0 && h[n-1].Seq != seq {
		return fmt.Errorf("history ends at %d, state is at %d", h[n-1].Seq, seq)
	}
	return nil
}
