package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/timeline"
)

// Journal is the operator's answer to GET /journal/{namespace}/{name}.
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
	// Recorded is when the operator wrote the record.
	Recorded time.Time `json:"recorded"`
}

// The kinds of journal records.
const (
	KindTransition = "transition"
	KindBackfilled = "backfilled"
	KindGap        = "gap"
)

// journalPath is the operator's endpoint for one cluster.
func journalPath(namespace, name string) string {
	return "/journal/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// maxJournalBytes bounds what is read from the operator: a journal is unbounded, but one
// this large is a bug or not the operator.
const maxJournalBytes = 256 << 20

// fetchJournal reads the journal of a cluster from the operator at base (scheme://host:port).
// It returns the body as received, for -o json and yaml, and decoded.
func fetchJournal(ctx context.Context, client *http.Client, base, namespace, name string) ([]byte, *Journal, error) {
	u := strings.TrimSuffix(base, "/") + journalPath(namespace, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJournalBytes))
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: reading the answer: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, &httpError{url: u, status: resp.Status, code: resp.StatusCode, body: snippet(body)}
	}
	var j Journal
	if err := json.Unmarshal(body, &j); err != nil {
		return nil, nil, fmt.Errorf("GET %s: not a journal: %w", u, err)
	}
	return body, &j, nil
}

// httpError is an answer other than 200 from something that listens on the journal port.
type httpError struct {
	url, status, body string
	code              int
}

func (e *httpError) Error() string {
	msg := fmt.Sprintf("GET %s: %s", e.url, e.status)
	if e.body != "" {
		msg += ": " + e.body
	}
	return msg
}

func snippet(body []byte) string {
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

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
	for _, r := range j.Records {
		switch r.Kind {
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
	if t.HasBackfilled() {
		_, err := fmt.Fprintln(w, timeline.Footnote)
		return err
	}
	return nil
}
