package timeline

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestGapText(t *testing.T) {
	for _, c := range []struct {
		from, to uint64
		want     string
	}{
		{1, 3, "3 transitions not journaled (seq 1-3)"},
		{4, 4, "1 transition not journaled (seq 4)"},
	} {
		if got := GapText(c.from, c.to, "not journaled"); got != c.want {
			t.Errorf("GapText(%d, %d) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
}

func TestRows(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tb := NewTable(Options{Now: now})
	tb.Add(Transition{Seq: 1, Time: now, To: "Bootstrapping", Event: "spec-changed", Reason: "SpecChanged", Message: "created"})
	tb.Add(Transition{Seq: 2, Time: now, From: "Bootstrapping", To: "Steady", Event: "bootstrap-complete", Reason: "Manual"})
	tb.Gap(5, 4, "never shown") // an empty range adds nothing
	tb.Add(Transition{Seq: 3, From: "Steady", To: "Rolling", Event: "rollout-needed", Backfilled: true})
	var b bytes.Buffer
	if _, err := tb.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 4 || tb.Len() != 3 || !tb.HasBackfilled() {
		t.Fatalf("got %d lines, Len %d:\n%s", len(lines), tb.Len(), b.String())
	}
	// No From: the first transition; the reason is the event's own form: not repeated; a
	// different reason with no message: shown alone; no time: unknown.
	for i, want := range []string{"<start> -> Bootstrapping", "Manual", "<unknown>"} {
		if !strings.Contains(lines[i+1], want) {
			t.Errorf("row %d %q lacks %q", i+1, lines[i+1], want)
		}
	}
	if strings.Contains(lines[1], "SpecChanged") || !strings.HasPrefix(lines[3], "3* ") {
		t.Errorf("rows:\n%s", b.String())
	}
}
