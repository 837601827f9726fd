package history

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/golden"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// now is the clock of every test: ages in the golden files are relative to it.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

// transitions are a cluster's life: bootstrap, a failover, a rollout with a hand-over, and
// a switchover. Entry i has seq i+1.
var transitions = []v1beta1.HistoryEntry{
	{Seq: 1, Time: at(-72 * time.Hour), From: "Bootstrapping", To: "Steady", Event: "bootstrap-complete", Reason: "BootstrapComplete", Message: "3/3 nodes ready, primary cache-0"},
	{Seq: 2, Time: at(-30 * time.Hour), From: "Steady", To: "FailingOver", Event: "primary-lost", Reason: "PrimaryLost", Message: "cache-0 unreachable for 3 probes"},
	{Seq: 3, Time: at(-30*time.Hour + 4*time.Second), From: "FailingOver", To: "FailingOver", Event: "candidate-elected", Reason: "CandidateElected", Message: "cache-1 has the highest offset (120394)"},
	{Seq: 4, Time: at(-30*time.Hour + 6*time.Second), From: "FailingOver", To: "Steady", Event: "failover-complete", Reason: "FailoverComplete", Message: "cache-1 is primary, 2 replicas follow"},
	{Seq: 5, Time: at(-2 * time.Hour), From: "Steady", To: "Rolling", Event: "rollout-needed", Reason: "RolloutNeeded", Message: "image valkey/valkey:8.0 -> valkey/valkey:8.1"},
	{Seq: 6, Time: at(-2*time.Hour + 40*time.Second), From: "Rolling", To: "Rolling", Event: "primary-handed-over", Reason: "PrimaryHandedOver", Message: "cache-1 -> cache-2"},
	{Seq: 7, Time: at(-2*time.Hour + 90*time.Second), From: "Rolling", To: "Steady", Event: "rollout-complete", Reason: "RolloutComplete", Message: "3/3 pods on revision 7d9f"},
	{Seq: 8, Time: at(-10 * time.Minute), From: "Steady", To: "FailingOver", Event: "switchover-requested", Reason: "SwitchoverRequested", Message: "requested by annotation valkey.fsm.dev/switchover-to=cache-0"},
	{Seq: 9, Time: at(-9 * time.Minute), From: "FailingOver", To: "Steady", Event: "failover-complete", Reason: "FailoverComplete", Message: "cache-0 is primary, 2 replicas follow"},
	{Seq: 10, Time: at(-1 * time.Minute), From: "Steady", To: "Rolling", Event: "spec-changed", Reason: "ManualRestart", Message: "restart requested"},
}

func at(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }

// entries returns transitions from seq first to last.
func entries(first, last int) []v1beta1.HistoryEntry {
	return append([]v1beta1.HistoryEntry(nil), transitions[first-1:last]...)
}

func cluster(uid string, h []v1beta1.HistoryEntry) *v1beta1.ValkeyCluster {
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "prod", UID: types.UID("uid-" + uid)}}
	vc.Status.History = h
	return vc
}

func printed(t *testing.T, vc *v1beta1.ValkeyCluster, opts Options) string {
	t.Helper()
	var out bytes.Buffer
	if opts.Now == nil {
		opts.Now = clock
	}
	if err := Print(&out, vc, opts); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestEmptyHistory(t *testing.T) {
	got := printed(t, cluster("a", nil), Options{Format: output.Text})
	golden.Assert(t, "empty.txt", []byte(got))
	if want := "No transitions recorded for prod/cache yet.\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// Scripts get a list they can iterate over, not null.
	if got := printed(t, cluster("a", nil), Options{Format: output.JSON}); got != "[]\n" {
		t.Errorf("json of an empty history is %q, want []", got)
	}
}

func TestHistoryFromTheStart(t *testing.T) {
	got := printed(t, cluster("a", entries(1, 10)), Options{Format: output.Text})
	golden.Assert(t, "normal.txt", []byte(got))
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 11 {
		t.Fatalf("got %d lines, want a header and 10 rows:\n%s", len(lines), got)
	}
	if strings.Contains(got, "...") || strings.Contains(got, "--full") {
		t.Error("a history that starts at seq 1 is shown with a gap")
	}
	// The reason is shown only when it is not the event's CamelCase form.
	if !strings.Contains(lines[10], "ManualRestart: restart requested") || strings.Contains(lines[1], "BootstrapComplete") {
		t.Errorf("reasons: row 10 is %q, row 1 is %q", lines[10], lines[1])
	}
	if !strings.Contains(lines[1], "2026-02-26T12:00:00Z") {
		t.Errorf("row 1 lacks its RFC 3339 time: %q", lines[1])
	}
}

func TestHistoryWithAges(t *testing.T) {
	got := printed(t, cluster("a", entries(1, 10)), Options{Format: output.Text, Age: true})
	golden.Assert(t, "normal-age.txt", []byte(got))
	if !strings.HasPrefix(got, "SEQ     AGE ") || !strings.Contains(got, "\n10      60s ") {
		t.Errorf("ages are not shown:\n%s", got)
	}
}

// status.history is bounded: what it no longer holds is shown as a gap, with the way to
// the journal.
func TestHistoryThatDroppedOldEntries(t *testing.T) {
	got := printed(t, cluster("a", entries(4, 10)), Options{Format: output.Text})
	golden.Assert(t, "bounded.txt", []byte(got))
	if !strings.Contains(got, "\n      ... 3 transitions no longer in status.history (seq 1-3) ...\n4 ") {
		t.Errorf("the gap line is missing or misplaced:\n%s", got)
	}
	if !strings.HasSuffix(got, "kubectl valkey history cache -n prod --full\n") {
		t.Errorf("no pointer to --full:\n%s", got)
	}
}

func TestHistoryJSONAndYAML(t *testing.T) {
	vc := cluster("a", entries(1, 3))
	gotJSON := printed(t, vc, Options{Format: output.JSON})
	golden.Assert(t, "history.json", []byte(gotJSON))
	gotYAML := printed(t, vc, Options{Format: output.YAML})
	golden.Assert(t, "history.yaml", []byte(gotYAML))
	for name, data := range map[string]string{"json": gotJSON, "yaml": gotYAML} {
		var back []v1beta1.HistoryEntry
		if err := yaml.UnmarshalStrict([]byte(data), &back); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := json.Marshal(vc.Status.History)
		got, _ := json.Marshal(back)
		if !bytes.Equal(got, want) {
			t.Errorf("%s does not decode to status.history:\n%s\nwant\n%s", name, got, want)
		}
	}
}
