package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/golden"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// The successive states of status.history a watch sees, as the operator appends and the
// bounded history drops old entries.
func watchSequence() []*v1beta1.ValkeyCluster {
	return []*v1beta1.ValkeyCluster{
		cluster("a", entries(1, 3)),
		cluster("a", entries(1, 3)), // another status field changed: nothing new
		cluster("a", entries(2, 5)), // 1 dropped, 4 and 5 appended
		cluster("a", entries(7, 9)), // 6 dropped before it was seen
		cluster("b", entries(1, 2)), // deleted and created again: a new life
	}
}

func TestWatchPrintsEachTransitionOnce(t *testing.T) {
	var out, notes bytes.Buffer
	p := newPrinter(&out, &notes, Options{Format: output.Text, Now: clock}, true)
	for _, vc := range watchSequence() {
		if err := p.print(vc); err != nil {
			t.Fatal(err)
		}
	}
	golden.Assert(t, "watch.txt", out.Bytes())
	if notes.Len() != 0 {
		t.Errorf("text notes went elsewhere than with the rows: %q", notes.String())
	}

	var seqs []string
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, line := range lines[1:] {
		if !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "ValkeyCluster") {
			seqs = append(seqs, strings.Fields(line)[0])
		}
	}
	if got, want := strings.Join(seqs, ","), "1,2,3,4,5,7,8,9,1,2"; got != want {
		t.Errorf("printed seqs %s, want %s", got, want)
	}
	if !strings.Contains(out.String(), "      ... 1 transition dropped from status.history unseen (seq 6) ...") {
		t.Errorf("the unseen transition 6 is not marked:\n%s", out.String())
	}
	if strings.Count(out.String(), "SEQ") != 1 {
		t.Errorf("the header is printed more than once:\n%s", out.String())
	}
	// Rows printed in different batches line up with the header.
	col := strings.Index(lines[0], "TRANSITION")
	for _, line := range lines[1:] {
		if strings.HasPrefix(line, "ValkeyCluster") {
			continue
		}
		if !strings.HasPrefix(line, " ") && (line[col-1] != ' ' || line[col] == ' ') {
			t.Errorf("row %q: its TRANSITION does not start at column %d, as in the header", line, col)
		}
	}
	if !strings.Contains(out.String(), "\nValkeyCluster prod/cache was deleted and created again: its history starts over\n1 ") {
		t.Errorf("the new life of the cluster is not announced before its first row:\n%s", out.String())
	}
}

// --watch -o json prints a stream of entries, one document each; notes stay out of it.
func TestWatchJSONStream(t *testing.T) {
	var out, notes bytes.Buffer
	p := newPrinter(&out, &notes, Options{Format: output.JSON, Now: clock}, true)
	for _, vc := range watchSequence()[:4] {
		if err := p.print(vc); err != nil {
			t.Fatal(err)
		}
	}
	dec := json.NewDecoder(&out)
	var seqs []int64
	for {
		var e v1beta1.HistoryEntry
		if err := dec.Decode(&e); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, e.Seq)
	}
	if got, want := seqs, []int64{1, 2, 3, 4, 5, 7, 8, 9}; !equal(got, want) {
		t.Errorf("streamed seqs %v, want %v", got, want)
	}
	if !strings.Contains(notes.String(), "prod/cache: 1 transition dropped from status.history unseen (seq 6)") {
		t.Errorf("the gap is not noted: %q", notes.String())
	}
}

func TestWatchYAMLStreamSeparatesDocuments(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out, io.Discard, Options{Format: output.YAML, Now: clock}, true)
	if err := p.print(cluster("a", entries(1, 2))); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "watch.yaml", out.Bytes())
	if n := strings.Count(out.String(), "---\n"); n != 2 {
		t.Errorf("%d document separators, want 2", n)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func object(t *testing.T, vc *v1beta1.ValkeyCluster) *unstructured.Unstructured {
	t.Helper()
	u, err := kube.Unstructured(vc)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// follow prints on each event and tells Watch why it stopped.
func TestFollowEvents(t *testing.T) {
	ctx := context.Background()
	run := func(events ...watch.Event) (string, error) {
		w := watch.NewFakeWithChanSize(len(events), false)
		for _, ev := range events {
			w.Action(ev.Type, ev.Object)
		}
		w.Stop() // the server closed the watch after these events
		var out bytes.Buffer
		p := newPrinter(&out, io.Discard, Options{Format: output.Text, Now: clock}, true)
		err := follow(ctx, w, p)
		return out.String(), err
	}

	out, err := run(watch.Event{Type: watch.Modified, Object: object(t, cluster("a", entries(1, 1)))},
		watch.Event{Type: watch.Modified, Object: object(t, cluster("a", entries(1, 2)))})
	if err != nil || strings.Count(out, "\n") != 3 {
		t.Errorf("two modifications: err %v, output\n%s", err, out)
	}

	_, err = run(watch.Event{Type: watch.Deleted, Object: object(t, cluster("a", nil))})
	if !errors.Is(err, errDeleted) {
		t.Errorf("deletion: err %v, want errDeleted", err)
	}

	out, err = run(watch.Event{Type: watch.Error, Object: object(t, cluster("a", nil))},
		watch.Event{Type: watch.Modified, Object: object(t, cluster("a", entries(1, 1)))})
	if err != nil || out != "" {
		t.Errorf("an error event must end the watch to re-read the object: err %v, output %q", err, out)
	}
}

func TestFollowEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w := watch.NewFake() // never sends and never closes
	done := make(chan error, 1)
	go func() {
		done <- follow(ctx, w, newPrinter(io.Discard, io.Discard, Options{Format: output.Text, Now: clock}, true))
	}()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("cancelled follow returned %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not return after its context was cancelled")
	}
}
