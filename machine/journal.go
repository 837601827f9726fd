package machine

import (
	"context"
	"fmt"
	"time"
)

// Entry is one record of a cluster's journal: an event, what was observed, the transition it
// caused and the persisted state after it. The journal is append-only and its sequence
// numbers are the transitions' (1, 2, 3 ... per cluster); storage (bbolt, keyed by the
// big-endian sequence) lives in the operator, not here.
type Entry struct {
	Seq         uint64
	Time        time.Time
	Event       Event
	From        State
	To          State
	Message     string
	Observation ObservationSummary
	// After is the persisted state the transition wrote.
	After Persisted
	// Observed is the whole observation the transition was decided on, so that a replay can
	// give Decide exactly what it was given (Observation keeps only a summary, for reading).
	// Nil in entries journaled before observations were kept, and in backfilled ones: those
	// cannot be replayed.
	Observed *Observation `json:",omitempty"`
}

// ObservationSummary is the part of an observation worth keeping for audits and replays
// into the simulator: the spec's generation and revision and each node's replication facts.
type ObservationSummary struct {
	Generation int64
	Revision   string
	Nodes      []NodeSummary
}

// NodeSummary is one node in an ObservationSummary.
type NodeSummary struct {
	Name         string
	Shard        int
	IP           string
	Reachable    bool
	FailedProbes int
	RunID        string
	Role         Role
	ReplID       string
	Offset       int64
	PrimaryHost  string
	LinkUp       bool
	WritesFenced bool
	SyncFenced   bool
}

// Summarize extracts the summary of an observation.
func Summarize(obs Observation) ObservationSummary {
	s := ObservationSummary{Generation: obs.Spec.Generation, Revision: obs.Spec.Revision, Nodes: make([]NodeSummary, len(obs.Nodes))}
	for i, n := range obs.Nodes {
		s.Nodes[i] = NodeSummary{
			Name: n.Name, Shard: n.Shard, IP: n.Pod.IP, Reachable: n.Reachable, FailedProbes: n.FailedProbes,
			RunID: n.Valkey.RunID, Role: n.Valkey.Role, ReplID: n.Valkey.ReplID, Offset: n.Valkey.Offset,
			PrimaryHost: n.Valkey.PrimaryHost, LinkUp: n.Valkey.LinkUp,
			WritesFenced: n.Valkey.WritesFenced, SyncFenced: n.Valkey.SyncFenced,
		}
	}
	return s
}

// EntryFor is the journal entry of a decision taken on obs; ok is false when the decision
// has no transition (nothing to journal).
func EntryFor(d Decision, obs Observation) (Entry, bool) {
	t := d.Transition
	if t == nil {
		return Entry{}, false
	}
	return Entry{Seq: t.Seq, Time: t.Time, Event: t.Event, From: t.From, To: t.To, Message: t.Message, Observation: Summarize(obs), After: d.Next.Clone(), Observed: &obs}, true
}

// Folded is what a journal folds into: the persisted state and the full history.
type Folded struct {
	State   Persisted
	Records []HistoryRecord
}

// History is the bounded view of the history for status.history: the newest limit records.
func (f Folded) History(limit int) []HistoryRecord {
	if limit <= 0 || len(f.Records) <= limit {
		return append([]HistoryRecord(nil), f.Records...)
	}
	return append([]HistoryRecord(nil), f.Records[len(f.Records)-limit:]...)
}

// Fold replays a journal from the start of a cluster's life: it executes every recorded event
// through the transition table (a looplab FSM set to the state the previous entry left) and
// checks that the journal is whole: sequence numbers 1, 2, 3 ..., each entry starting where
// the previous ended, each transition the table's, each After in the state
// the transition reached. It returns the persisted state and history the entries rebuild.
func Fold(entries []Entry) (Folded, error) {
	f := Folded{State: Persisted{State: Bootstrapping}}
	for _, e := range entries {
		if err := f.Apply(e); err != nil {
			return f, err
		}
	}
	return f, nil
}

// Apply folds one more entry into f, with the checks of Fold; a journal reader that keeps
// its fold up to date applies entries one at a time.
func (f *Folded) Apply(e Entry) error {
	if f.State.State == "" {
		f.State.State = Bootstrapping
	}
	if e.Seq != f.State.Seq+1 {
		return fmt.Errorf("journal: entry has seq %d, want %d", e.Seq, f.State.Seq+1)
	}
	if e.From != f.State.State {
		return fmt.Errorf("journal: entry %d starts in %s, previous ended in %s", e.Seq, e.From, f.State.State)
	}
	to, taken, err := fireFrom(context.Background(), e.From, e.Event)
	if err != nil || !taken {
		return fmt.Errorf("journal: entry %d: %s from %s is not in the table: %v", e.Seq, e.Event, e.From, err)
	}
	if to != e.To || e.After.State != to || e.After.Seq != e.Seq {
		return fmt.Errorf("journal: entry %d: %s from %s leads to %s, entry says %s (after: %s #%d)", e.Seq, e.Event, e.From, to, e.To, e.After.State, e.After.Seq)
	}
	f.State = e.After.Clone()
	f.Records = append(f.Records, HistoryRecord{Seq: e.Seq, From: e.From, To: e.To, Event: e.Event, Reason: e.Event.Reason(), Message: e.Message, Time: e.Time})
	return nil
}
