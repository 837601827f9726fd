package replay_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/replay"
)

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func journalFile(t *testing.T, j replay.Journal) string {
	t.Helper()
	data, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, data)
}

func runMain(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := replay.Main(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestMainExitCodes(t *testing.T) {
	j := pausedPrimary(t)
	good := journalFile(t, j)
	if code, out, errOut := runMain(good); code != 0 || !strings.Contains(out, "Deterministic") {
		t.Fatalf("a recorded run: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := runMain("--set", "detectionProbes=5", "--set", "fenceTimeout=30s", good); code != 0 || !strings.Contains(out, "detectionProbes=5, fenceTimeout=30s") {
		t.Fatalf("a what-if exits 0 whatever it finds: exit %d\n%s", code, out)
	}
	for i := range j.Records {
		if j.Records[i].Kind == replay.KindTransition && j.Records[i].Entry.Seq == 2 {
			j.Records[i].Entry.To = "Rolling"
		}
	}
	if code, out, _ := runMain(journalFile(t, j)); code != 1 || !strings.Contains(out, "NOT DETERMINISTIC") {
		t.Fatalf("a journal the machine does not repeat: exit %d\n%s", code, out)
	}
	if code, _, errOut := runMain("--set", "fence=1s", good); code != 2 || !strings.Contains(errOut, `unknown setting "fence"`) || !strings.Contains(errOut, "fenceTimeout:") {
		t.Fatalf("an unknown setting: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runMain("--set", "fenceTimeout=ten", good); code != 2 || !strings.Contains(errOut, "want a duration") {
		t.Fatalf("a bad value: exit %d, %s", code, errOut)
	}
}

// Corrupt and foreign files are refused with what is wrong with them, never replayed as an
// empty journal.
func TestMainRefusesWhatIsNoJournal(t *testing.T) {
	data, _ := json.Marshal(pausedPrimary(t))
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"truncated":     {data[:len(data)/2], "not JSON"},
		"empty":         {nil, "the journal file is empty"},
		"foreign":       {[]byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{}}`), "is not a journal page"},
		"status":        {[]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"u may not get journals","code":403}`), "an error the API server answered, not a page: u may not get journals"},
		"records":       {[]byte(`{"cluster":"a/b/c","records":{"kind":"transition"}}`), "its records are not journal records"},
		"two clusters":  {[]byte(`{"cluster":"a/b/1","records":[]}{"cluster":"a/b/2","records":[]}`), "of cluster a/b/2, the ones before of a/b/1"},
		"not a journal": {[]byte(`[1,2,3]`), "is not a journal page (a JSON array)"},
	} {
		code, out, errOut := runMain(writeFile(t, c.data))
		if code != 2 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%s: exit %d, %q, want exit 2 and %q", name, code, errOut, c.want)
		}
	}
	if code, _, errOut := runMain(filepath.Join(t.TempDir(), "missing.json")); code != 2 || !strings.Contains(errOut, "no such file") {
		t.Errorf("a missing file: exit %d, %s", code, errOut)
	}
}

// A journal written before observations were kept (and one with a backfilled stretch and a
// gap) replays what it can and says what it cannot: not an error.
func TestOldJournalIsNotReplayable(t *testing.T) {
	j := pausedPrimary(t)
	var old replay.Journal
	for _, r := range j.Records {
		if r.Kind == replay.KindTransition {
			r.Entry.Observed = nil
			old.Records = append(old.Records, r)
		}
	}
	code, out, _ := runMain(journalFile(t, old))
	if code != 0 || !strings.Contains(out, "not replayable: journaled before the operator kept observations") || !strings.Contains(out, "Deterministic: all 0 replayed decisions") {
		t.Fatalf("an old journal: exit %d\n%s", code, out)
	}
	// A gap, then backfilled records, then the operator's own: from its first transition
	// on, the journal replays (the observations after it are decided on its state).
	mixed := replay.Journal{Records: []replay.Record{{Kind: replay.KindGap, GapFrom: 1, GapTo: 1}}}
	for _, r := range j.Records {
		if r.Kind == replay.KindTransition && r.Entry.Seq == 2 {
			// As Backfill writes it: no observation, no state.
			r.Entry.Observed, r.Entry.After = nil, machine.Persisted{}
			mixed.Records = append(mixed.Records, replay.Record{Kind: replay.KindBackfilled, Entry: r.Entry})
			continue
		}
		if r.Seq() >= 3 {
			mixed.Records = append(mixed.Records, r)
		}
	}
	rep := replay.Replay(mixed, nil)
	if rep.Differed != 0 || rep.Same == 0 || rep.NotReplayable < 2 {
		t.Fatalf("mixed journal: %d same, %d differed, %d not replayable", rep.Same, rep.Differed, rep.NotReplayable)
	}
}
