package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/sim"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// simulatedJournalFile writes the journal of a simulated failover as history --full -o json
// prints it, tampered with by tamper when it is not nil.
func simulatedJournalFile(t *testing.T, tamper func(*Journal)) string {
	t.Helper()
	s := sim.New(sim.Topologies["replication"], sim.Options{Journal: true})
	for i := 0; i < 40; i++ {
		s.Step(sim.Step{Kind: sim.StepOperator})
	}
	s.Step(sim.Step{Kind: sim.StepFault, Fault: sim.Fault{Kind: sim.FaultPause, Node: sim.NodeRef{Primary: true}, Ticks: 6}})
	for i := 0; i < 60; i++ {
		s.Step(sim.Step{Kind: sim.StepOperator})
	}
	s.Converge()
	data, err := json.Marshal(s.Records())
	if err != nil {
		t.Fatal(err)
	}
	var j Journal
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	if tamper != nil {
		tamper(&j)
	}
	if data, err = json.Marshal(j); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "journal.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runHistory(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewCmd(kube.NewFlags(), clock)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestReplayFromFile(t *testing.T) {
	path := simulatedJournalFile(t, nil)
	out, err := runHistory(t, "cache", "--replay", "--from-file", path)
	if err != nil || !strings.Contains(out, "Deterministic: all ") || !strings.Contains(out, "Steady -> FailingOver (primary-lost)") {
		t.Fatalf("err %v:\n%s", err, out)
	}
	out, err = runHistory(t, "cache", "--replay", "--from-file", path, "--set", "detectionProbes=5")
	if err != nil || !strings.Contains(out, "With detectionProbes=5 ") || !strings.Contains(out, "would have differed") {
		t.Fatalf("what-if: err %v:\n%s", err, out)
	}
	out, err = runHistory(t, "cache", "--replay", "--from-file", path, "--set", "detectionProbes=5", "-o", "json")
	var doc struct {
		Overrides []struct{ Key, Value string }
		Steps     []struct {
			Verdict  string
			Recorded struct{ Event string }
		}
		Differed int
		Timings  []struct{ Event string }
	}
	if err != nil || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Overrides) != 1 || doc.Overrides[0].Value != "5" || doc.Differed == 0 || len(doc.Timings) == 0 || doc.Timings[0].Event != "primary-lost" {
		t.Fatalf("-o json: err %v, %+v:\n%s", err, doc, out)
	}
	if _, err := runHistory(t, "cache", "--replay", "--from-file", path, "--set", "detectionprobes=5"); err == nil || !strings.Contains(err.Error(), `unknown setting "detectionprobes"`) || !strings.Contains(err.Error(), "fenceTimeout") {
		t.Fatalf("an unknown setting: %v", err)
	}
	if _, err := runHistory(t, "cache", "--set", "detectionProbes=5"); err == nil || !strings.Contains(err.Error(), "for --replay") {
		t.Fatalf("--set without --replay: %v", err)
	}
}

// A plain replay that differs fails the command (after the report): a determinism failure.
func TestReplayThatDiffersFails(t *testing.T) {
	path := simulatedJournalFile(t, func(j *Journal) {
		for i := range j.Records {
			if j.Records[i].Entry.Event == machine.EventPrimaryLost {
				j.Records[i].Entry.Message = "not what the machine says"
			}
		}
	})
	out, err := runHistory(t, "cache", "--replay", "--from-file", path)
	var nd errNotDeterministic
	if !errors.As(err, &nd) || !strings.Contains(out, "NOT DETERMINISTIC") {
		t.Fatalf("err %v:\n%s", err, out)
	}
}

// A file that is not a journal is refused with what it is.
func TestReplayOfAForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods.json")
	if err := os.WriteFile(path, []byte(`{"apiVersion":"v1","kind":"List","items":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runHistory(t, "cache", "--replay", "--from-file", path); err == nil || !strings.Contains(err.Error(), "is not a journal page") {
		t.Fatalf("a foreign file: %v", err)
	}
}
