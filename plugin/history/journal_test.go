package history

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/operator/journal"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/golden"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

const clusterKey = "prod/cache/0b7c5a4e-6f1d-4b8e-9a53-2d1f0c9e8a77"

// operatorJournal writes a journal the way the operator does: a leader that starts when
// status.history holds transitions 4 and 5 only (1-3 are lost: a gap), then journals 6 itself.
func operatorJournal(t *testing.T) []journal.Record {
	t.Helper()
	j, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var history []machine.HistoryRecord
	for _, e := range entries(4, 5) {
		history = append(history, machine.HistoryRecord{Seq: uint64(e.Seq), From: machine.State(e.From), To: machine.State(e.To), Event: machine.Event(e.Event), Reason: e.Reason, Message: e.Message, Time: e.Time.Time})
	}
	if _, err := j.Backfill(clusterKey, history); err != nil {
		t.Fatal(err)
	}
	e6 := transitions[5]
	entry := machine.Entry{Seq: 6, Time: e6.Time.Time, Event: machine.Event(e6.Event), From: machine.State(e6.From), To: machine.State(e6.To), Message: e6.Message,
		Observation: machine.ObservationSummary{Generation: 2, Nodes: []machine.NodeSummary{{Name: "cache-1", Role: machine.Role("primary"), Offset: 120394}}}}
	obs := machine.Observation{Time: e6.Time.Time, Clock: "op-1", Spec: machine.Spec{Generation: 2, FailureThreshold: 3}, Nodes: []machine.Node{{Name: "cache-1", Reachable: true, Valkey: machine.Valkey{Role: machine.RolePrimary, Offset: 120394}}}}
	entry.Observed = &obs
	if err := j.Append(clusterKey, entry); err != nil {
		t.Fatal(err)
	}
	// Then an observation that caused no transition, and one more equal to it but for its
	// time (a repeat).
	later := obs
	later.Time = obs.Time.Add(time.Second)
	later.Nodes = []machine.Node{{Name: "cache-1", Reachable: true, Valkey: machine.Valkey{Role: machine.RolePrimary, Offset: 120400}}}
	j.Observe(clusterKey, 6, later)
	later.Time = later.Time.Add(time.Second)
	j.Observe(clusterKey, 6, later)
	j.Flush()
	records, err := j.Records(clusterKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	return records
}

// served is the document the operator serves: its records marshalled as they are.
func served(t *testing.T, records []journal.Record) []byte {
	t.Helper()
	data, err := json.Marshal(struct {
		Cluster string           `json:"cluster"`
		Records []journal.Record `json:"records"`
	}{clusterKey, records})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The plugin's JournalRecord mirrors the operator's journal.Record: every record of a real
// journal decodes into it and encodes back to the same JSON.
func TestJournalRecordMirrorsTheOperatorsType(t *testing.T) {
	records := operatorJournal(t)
	var j Journal
	if err := json.Unmarshal(served(t, records), &j); err != nil {
		t.Fatal(err)
	}
	if j.Cluster != clusterKey || len(j.Records) != len(records) {
		t.Fatalf("decoded %q with %d records, want %q with %d", j.Cluster, len(j.Records), clusterKey, len(records))
	}
	kinds := []string{}
	for i, r := range records {
		mine, _ := json.Marshal(j.Records[i])
		theirs, _ := json.Marshal(r)
		if !bytes.Equal(mine, theirs) {
			t.Errorf("record %d does not round-trip:\nplugin   %s\noperator %s", i, mine, theirs)
		}
		if !reflect.DeepEqual(j.Records[i].Entry, r.Entry) {
			t.Errorf("record %d: entry %+v, want %+v", i, j.Records[i].Entry, r.Entry)
		}
		kinds = append(kinds, j.Records[i].Kind)
	}
	if got, want := strings.Join(kinds, ","), "gap,backfilled,backfilled,transition,observation,observation"; got != want {
		t.Errorf("kinds %s, want %s: the journal package changed how it backfills", got, want)
	}
	if string(journal.KindTransition) != KindTransition || string(journal.KindBackfilled) != KindBackfilled || string(journal.KindGap) != KindGap || string(journal.KindObservation) != KindObservation {
		t.Error("the kinds' names differ from the operator's")
	}
}

func TestJournalText(t *testing.T) {
	raw := served(t, operatorJournal(t))
	var j Journal
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := PrintJournal(&out, raw, &j, Options{Format: output.Text, Now: clock}); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "journal.txt", out.Bytes())
	got := out.String()
	for _, want := range []string{
		"\n      ... 3 transitions not journaled (seq 1-3) ...\n",
		"\n4*      2026-02-28T06:00:06Z   FailingOver -> Steady ",
		"\n6       2026-03-01T10:00:40Z   Rolling -> Rolling ",
		"\n* backfilled from status.history",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestJournalWithoutBackfillHasNoFootnote(t *testing.T) {
	j := &Journal{Cluster: clusterKey, Records: []JournalRecord{{Kind: KindTransition, Entry: machine.Entry{Seq: 1, Time: now, Event: "bootstrap-complete", From: "Bootstrapping", To: "Steady"}}}}
	var out bytes.Buffer
	if err := PrintJournal(&out, nil, j, Options{Format: output.Text, Now: clock}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "*") {
		t.Errorf("a journal without backfilled records is marked:\n%s", out.String())
	}
}

func TestEmptyJournalAndUnknownKind(t *testing.T) {
	var out bytes.Buffer
	if err := PrintJournal(&out, nil, &Journal{Cluster: clusterKey}, Options{Format: output.Text, Now: clock}); err != nil {
		t.Fatal(err)
	}
	if want := "The operator's journal has no record of " + clusterKey + ".\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	out.Reset()
	j := &Journal{Cluster: clusterKey, Records: []JournalRecord{{Kind: "snapshot", Entry: machine.Entry{Seq: 7}}}}
	if err := PrintJournal(&out, nil, j, Options{Format: output.Text, Now: clock}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `... 1 transition in a record of unknown kind "snapshot" (seq 7) ...`) {
		t.Errorf("a record of a newer kind is not shown:\n%s", out.String())
	}
}

// -o json and yaml print the operator's document as served, fields unknown to the plugin
// included.
func TestJournalJSONAndYAML(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "journal-document.json"))
	if err != nil {
		t.Fatal(err)
	}
	var j Journal
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	for _, f := range []output.Format{output.JSON, output.YAML} {
		var out bytes.Buffer
		if err := PrintJournal(&out, raw, &j, Options{Format: f, Now: clock}); err != nil {
			t.Fatal(err)
		}
		golden.Assert(t, "journal."+string(f), out.Bytes())
		var got, want any
		if err := yaml.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s is not the served document:\n%s", f, out.String())
		}
	}
	if !strings.Contains(string(raw), `"leader"`) {
		t.Fatal("the document lacks the field a newer operator might add, which the test needs")
	}
}

// pagedJournal serves a cluster's journal in pages of at most pageSize at the journal's API
// path, as the operator does behind the API server (this stands in for both: the paging
// itself is the operator's journal.Page), and 404 elsewhere, or when the plugin does not ask
// for the observations (history --replay needs them).
func pagedJournal(t *testing.T, records []journal.Record, pageSize int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.EscapedPath() != journalPath("prod", "cache") || r.URL.Query().Get("observations") != "true" {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		from := 0
		if c := r.URL.Query().Get("continue"); c != "" {
			from, _ = strconv.Atoi(c)
		}
		var page []journal.Record
		next := ""
		for _, rec := range records {
			if int(rec.Seq()) < from {
				continue
			}
			// As journal.Page: a page never ends among the observations after a transition.
			if len(page) >= pageSize && rec.Kind != journal.KindObservation {
				next = strconv.FormatUint(rec.Seq(), 10)
				break
			}
			page = append(page, rec)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"metadata": map[string]string{"continue": next}, "cluster": clusterKey, "records": page})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestReadJournalReadsEveryPage: whatever the page size, every record is read once, in order.
func TestReadJournalReadsEveryPage(t *testing.T) {
	records := operatorJournal(t)
	for _, size := range []int{1, 3, 500} {
		srv := pagedJournal(t, records, size)
		rc, err := rest.RESTClientFor(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{NegotiatedSerializer: scheme.Codecs.WithoutConversion(), GroupVersion: &schema.GroupVersion{}}})
		if err != nil {
			t.Fatal(err)
		}
		raw, j, err := readJournal(context.Background(), rc, "prod", "cache")
		if err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for _, r := range j.Records {
			seqs = append(seqs, r.Entry.Seq, r.GapFrom)
		}
		if j.Cluster != clusterKey || len(j.Records) != len(records) || !json.Valid(raw) {
			t.Errorf("page size %d: cluster %q, records %v of %d", size, j.Cluster, seqs, len(records))
		}
		_, _, err = readJournal(context.Background(), rc, "prod", "other")
		if err == nil || !strings.Contains(err.Error(), "prod/other") {
			t.Errorf("a cluster without a journal: %v", err)
		}
	}
}
