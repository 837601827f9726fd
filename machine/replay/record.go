package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The kinds of journal records (operator/journal's Kind).
const (
	KindTransition  = "transition"
	KindBackfilled  = "backfilled"
	KindGap         = "gap"
	KindObservation = "observation"
)

// Record is one journal record as the operator's journal endpoint serves it. It mirrors
// journal.Record of operator/journal field for field (a test there checks it) rather than
// import it: that package is the operator's and brings bbolt with it, and a replay is pure.
type Record struct {
	Kind  string        `json:"kind"`
	Entry machine.Entry `json:"entry,omitzero"`
	// GapFrom and GapTo are the first and last sequence numbers a gap stands for.
	GapFrom uint64 `json:"gapFrom,omitempty"`
	GapTo   uint64 `json:"gapTo,omitempty"`
	// Observed is an observation that caused no transition (KindObservation).
	Observed *machine.JournaledObservation `json:"observed,omitempty"`
	// Recorded is when the operator wrote the record.
	Recorded time.Time `json:"recorded"`
}

// Journal is one cluster's journal: the records of every page, oldest first.
type Journal struct {
	// Cluster is the journal's key for the cluster (namespace/name/uid), "" when unknown.
	Cluster string   `json:"cluster"`
	Records []Record `json:"records"`
}

// page is one document of an exported journal: what the journal endpoint answers
// (JournalPage), or a whole journal as `kubectl valkey history NAME --full -o json` prints it.
type page struct {
	Kind    string          `json:"kind"`
	Cluster string          `json:"cluster"`
	Records json.RawMessage `json:"records"`
	// Message is set in a Status (an error the API server answered instead of a page).
	Message string `json:"message"`
}

// Read reads an exported journal: one or more JSON documents, one after the other, each a
// page as the journal endpoint answers it (so `kubectl get --raw
// .../journals/NAME?observations=true&continue=N` appended to one file works) or a whole journal (`kubectl valkey history NAME --full -o
// json`). Pages of another cluster, a Status instead of a page, or a document that is no
// journal are refused with what is wrong; records of kinds it does not know are kept (Replay
// reports them as not replayable).
func Read(r io.Reader) (Journal, error) {
	dec := json.NewDecoder(r)
	var j Journal
	for doc := 1; ; doc++ {
		var p page
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			if doc == 1 {
				return j, errors.New("the journal file is empty")
			}
			return j, nil
		}
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr):
			return j, fmt.Errorf("journal document %d is not a journal page (a JSON %s): %w", doc, typeErr.Value, err)
		case err != nil:
			return j, fmt.Errorf("journal document %d: not JSON, or cut short (a corrupt or truncated file?): %w", doc, err)
		}
		switch {
		case p.Kind == "Status":
			return j, fmt.Errorf("journal document %d is an error the API server answered, not a page: %s", doc, p.Message)
		case p.Records == nil || bytes.Equal(p.Records, []byte("null")) && p.Cluster == "":
			return j, fmt.Errorf("journal document %d is not a journal page (no \"records\"): export one with kubectl get --raw '/apis/journal.valkey.fsm.dev/v1alpha1/namespaces/NS/journals/NAME?observations=true', or kubectl valkey history NAME --full -o json", doc)
		case j.Cluster != "" && p.Cluster != "" && p.Cluster != j.Cluster:
			return j, fmt.Errorf("journal document %d is of cluster %s, the ones before of %s: one journal at a time", doc, p.Cluster, j.Cluster)
		}
		var recs []Record
		if err := json.Unmarshal(p.Records, &recs); err != nil {
			return j, fmt.Errorf("journal document %d: its records are not journal records: %w", doc, err)
		}
		if p.Cluster != "" {
			j.Cluster = p.Cluster
		}
		j.Records = append(j.Records, recs...)
	}
}

// Seq is the sequence number the record is stored under: a transition's, the first of a gap,
// for an observation that of the state it was decided on.
func (r Record) Seq() uint64 {
	switch {
	case r.Kind == KindGap:
		return r.GapFrom
	case r.Kind == KindObservation && r.Observed != nil:
		return r.Observed.Seq
	}
	return r.Entry.Seq
}
