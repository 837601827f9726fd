package machine

import (
	"os"
	"strings"
	"testing"
)

// The committed docs/state-machine.md must be exactly what the generator prints, so the
// documentation can never drift from the table (make generate rewrites it).
func TestStateMachineDocIsGenerated(t *testing.T) {
	want, err := RenderMarkdown()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../docs/state-machine.md")
	if err != nil {
		t.Fatalf("%v (run: go run ./machine/cmd/render-diagram > docs/state-machine.md)", err)
	}
	if string(got) != want {
		t.Fatal("docs/state-machine.md drifted from the transition table: run go run ./machine/cmd/render-diagram > docs/state-machine.md")
	}
}

// The README's diagram is the generated overview.
func TestReadmeDiagramIsGenerated(t *testing.T) {
	diagram := OverviewDiagram()
	got, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := WithDiagram(string(got), diagram)
	if err != nil {
		t.Fatal(err)
	}
	if want != string(got) {
		t.Fatal("README.md's state diagram drifted from the transition table: run make generate")
	}
}

func TestDocShowsEveryEdgeAndState(t *testing.T) {
	doc, err := RenderMarkdown()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Table() {
		line := string(e.From) + " --> " + string(e.To) + ": " + string(e.Event)
		if !strings.Contains(doc, line) {
			t.Errorf("diagram lacks %q", line)
		}
	}
	for _, s := range States() {
		if !strings.Contains(doc, "\n### "+string(s)+"\n") {
			t.Errorf("no section for %s", s)
		}
		if stateDoc[s] == "" {
			t.Errorf("no description for %s", s)
		}
	}
}
