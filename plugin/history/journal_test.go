package history

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	if err := j.Append(clusterKey, entry); err != nil {
		t.Fatal(err)
	}
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
	if got, want := strings.Join(kinds, ","), "gap,backfilled,backfilled,transition"; got != want {
		t.Errorf("kinds %s, want %s: the journal package changed how it backfills", got, want)
	}
	if string(journal.KindTransition) != KindTransition || string(journal.KindBackfilled) != KindBackfilled || string(journal.KindGap) != KindGap {
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
	j := &Journal{Cluster: clusterKey, Records: []JournalRecord{{Kind: "observation", Entry: machine.Entry{Seq: 7}}}}
	if err := PrintJournal(&out, nil, j, Options{Format: output.Text, Now: clock}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `... 1 transition in a record of unknown kind "observation" (seq 7) ...`) {
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

// journalServer serves doc at the journal path of prod/cache and 404 elsewhere.
func journalServer(t *testing.T, doc []byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.EscapedPath() != "/journal/prod/cache" {
			http.Error(w, "no journal of "+r.URL.Path, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestReadJournalFromOperatorURL(t *testing.T) {
	doc := served(t, operatorJournal(t))
	srv := journalServer(t, doc)
	raw, j, err := readJournal(context.Background(), nil, OperatorOptions{URL: srv.URL + "/"}, "prod", "cache")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, doc) || len(j.Records) != 4 {
		t.Errorf("got %d records, raw %s", len(j.Records), raw)
	}

	_, _, err = readJournal(context.Background(), nil, OperatorOptions{URL: srv.URL}, "prod", "other")
	if err == nil || !strings.Contains(err.Error(), "404 Not Found") || !strings.Contains(err.Error(), "has no journal of this cluster") {
		t.Errorf("a cluster the operator does not know: %v", err)
	}

	notJournal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>metrics</html>")) }))
	defer notJournal.Close()
	_, _, err = readJournal(context.Background(), nil, OperatorOptions{URL: notJournal.URL}, "prod", "cache")
	if err == nil || !strings.Contains(err.Error(), "not a journal") {
		t.Errorf("something else on the port: %v", err)
	}
}

// closedPort is a loopback address where nothing listens: connections are refused.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// Pods are tried in turn; the error after the last one lists each attempt.
func TestTryEndpoints(t *testing.T) {
	doc := served(t, operatorJournal(t))
	good := journalServer(t, doc)
	dead := endpoint{what: "pod valkey-operator-a", pod: "valkey-operator-a", url: "http://" + closedPort(t)}
	unaware := endpoint{what: "pod valkey-operator-b", pod: "valkey-operator-b", url: journalServer(t, doc).URL + "/elsewhere"}

	_, j, err := tryEndpoints(context.Background(), httpClient(false), []endpoint{dead, unaware, {what: "pod valkey-operator-c", url: good.URL}}, "prod", "cache")
	if err != nil || len(j.Records) != 4 {
		t.Fatalf("the third pod serves the journal: %v", err)
	}

	_, _, err = tryEndpoints(context.Background(), httpClient(false), []endpoint{dead, unaware}, "prod", "cache")
	if err == nil {
		t.Fatal("no endpoint serves the journal, yet no error")
	}
	msg := err.Error()
	for _, want := range []string{"cannot read the journal of prod/cache", "pod valkey-operator-a: ", "connection refused", "pod valkey-operator-b: ", "404 Not Found", "has no journal of this cluster"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}

func TestPodEndpoints(t *testing.T) {
	pod := func(name, ip string, ready corev1.ConditionStatus) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{PodIP: ip}}
		if ready != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
		}
		return p
	}
	terminating := pod("op-a", "10.0.0.1", corev1.ConditionTrue)
	terminating.DeletionTimestamp = &metav1.Time{Time: now}
	pods := []corev1.Pod{
		pod("op-z", "10.0.0.9", corev1.ConditionTrue),
		pod("op-b", "", corev1.ConditionTrue),
		pod("op-c", "10.0.0.3", corev1.ConditionFalse),
		pod("op-d", "10.0.0.4", ""),
		terminating,
		pod("op-e", "fd00::5", corev1.ConditionTrue),
	}
	got := podEndpoints(pods, 8082, "")
	want := []endpoint{{what: "pod op-e", pod: "op-e", url: "http://[fd00::5]:8082"}, {what: "pod op-z", pod: "op-z", url: "http://10.0.0.9:8082"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// The leader's journal is the current one: it is tried first.
	got = podEndpoints(pods, 8082, "op-z")
	want = []endpoint{{what: "pod op-z (leader)", pod: "op-z", url: "http://10.0.0.9:8082"}, {what: "pod op-e", pod: "op-e", url: "http://[fd00::5]:8082"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with leader op-z: got %+v, want %+v", got, want)
	}
	// A leader that is not Ready is not dialled.
	if got := podEndpoints(pods, 8082, "op-c"); len(got) != 2 || got[0].pod != "op-e" {
		t.Errorf("with a leader that is not Ready: %+v", got)
	}
}
