package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixture = "testdata/crds/example.com_widgets.yaml"

// generateFrom runs the command on a copy of the CRD text and a page with hand-written text
// around the markers, and returns the page it wrote.
func generateFrom(t *testing.T, crd string) string {
	t.Helper()
	dir := t.TempDir()
	crds := filepath.Join(dir, "crds")
	if err := os.Mkdir(crds, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crds, "example.com_widgets.yaml"), []byte(crd), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(dir, "api.md")
	page := "# Widgets\n\nHand-written guidance.\n\n" + beginMarker + " (make generate) -->\nstale text\n" + endMarker + "\n\nMore guidance.\n"
	if err := os.WriteFile(doc, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(crds, doc); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// squash makes every run of white space one space: the page wraps lines at its width.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

func readFixture(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestThePageShowsTheSchema: every kind of fact the CRD states reaches the page, for each
// served version and none of the version no longer served.
func TestThePageShowsTheSchema(t *testing.T) {
	page := generateFrom(t, readFixture(t))
	for _, want := range []string{
		// The hand-written text stays, the stale generated text goes.
		"# Widgets\n\nHand-written guidance.\n\n" + beginMarker + " (make generate) -->\n",
		endMarker + "\n\nMore guidance.\n",
		// The index and each served version, with its anchor and the storage version marked.
		"| Widget | [v1](#widget-v1) (storage), [v2beta1](#widget-v2beta1) | `wdg` | `toys` | Namespaced |",
		"### Widget v1\n",
		"### Widget v2beta1\n",
		"served, the storage version (objects are stored in it); namespaced, subresources `status`.",
		"served, converted to and from the storage version; namespaced.",
		// Fields: type, required-ness, enum, default, bounds, pattern, description, escaping.
		"- **`color`** string, **required**; one of `Red`, `Blue`\n",
		"  Color is the paint of the widget: a \\*bright\\* color for the \\<name\\>-shop, with\n  master_repl_offset as its source.\n",
		"- **`speed`** integer (int32); default `3`; minimum 1; maximum 12\n",
		"- **`label`** string; at most 63 characters; matches `^[a-z]+$`\n",
		"- **`tags`** map[string]string; at most 4 entries; each value: at most 32 characters\n",
		"- **`size`** integer or string; matches",
		"- **`colour`** string; default `Blue`\n",
		// An array of objects is a level of its own, linked from its field, with an anchor.
		"- **`parts`** []object, fields in [`spec.parts[]`](#widget-v1-spec-parts); at most 8 items; a list\n  map keyed by `name`\n",
		"<a id=\"widget-v1-spec-parts\"></a>\n\n**`spec.parts[]`**\n\nPart is one piece of a widget.\n",
		"- **`name`** string, **required**; at least 1 character\n",
		// CEL rules at their level, with message, transition rules on update only.
		"  * `self == oldSelf` (on update)\\\n    refused with: color is immutable: paint another widget\n",
		"Rules on `spec` (`self` is this object):\n\n* `!has(self.speed) || self.speed < 10 || self.color == 'Red'` (on create and update)\\\n  refused with: a fast widget must be Red\n",
		"refused with: size cannot shrink from … to … (the message is `'size cannot shrink from ' + string(oldSelf) + ' to ' + string(self)`)",
		"| [`spec.color`](#widget-v1-spec) | update | color is immutable: paint another widget |",
		"| [`spec`](#widget-v1-spec) | create, update | a fast widget must be Red |",
		// Printer columns, the wide one marked.
		"| COLOR | `.spec.color` | string | always |  |",
		"| WHY | `.status.why` | string | wide (priority 1) | Why the widget is not spinning |",
		"| COLOUR | `.spec.colour` | string | always |  |",
	} {
		if !strings.Contains(squash(page), squash(want)) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, absent := range []string{"stale text", "retiredField", "Widget v0", "(#widget-v0)"} {
		if strings.Contains(page, absent) {
			t.Errorf("the page shows %q", absent)
		}
	}
	if again := generateFrom(t, readFixture(t)); again != page {
		t.Error("two runs on the same CRD write different pages")
	}
}

// TestRemovingARuleChangesThePage: the page follows the CRD, so a rule dropped from the API
// is dropped from the page (and make verify-generate sees the difference).
func TestRemovingARuleChangesThePage(t *testing.T) {
	crd := readFixture(t)
	rule := "            x-kubernetes-validations:\n            - message: a fast widget must be Red\n              rule: '!has(self.speed) || self.speed < 10 || self.color == ''Red'''\n"
	if !strings.Contains(crd, rule) {
		t.Fatal("the fixture has no longer the rule this test removes")
	}
	before := generateFrom(t, crd)
	after := generateFrom(t, strings.Replace(crd, rule, "", 1))
	if before == after {
		t.Fatal("removing a rule did not change the page")
	}
	for _, gone := range []string{"a fast widget must be Red", "Rules on `spec`"} {
		if strings.Contains(after, gone) {
			t.Errorf("the page still shows %q", gone)
		}
	}
	if !strings.Contains(after, "color is immutable: paint another widget") {
		t.Error("removing one rule removed another")
	}
}

func TestSpliceNeedsItsMarkers(t *testing.T) {
	for name, doc := range map[string]string{
		"no begin": "text\n" + endMarker + "\n",
		"no end":   beginMarker + " -->\ntext\n",
		"two":      beginMarker + " -->\n" + endMarker + "\n" + beginMarker + " -->\n" + endMarker + "\n",
		"inline":   "see " + beginMarker + " -->\n" + endMarker + "\n",
	} {
		if _, err := splice(doc, "new\n"); err == nil {
			t.Errorf("%s: spliced", name)
		}
	}
}

// TestTheAPIPageIsUpToDate: docs/api.md is what the generator writes from the committed CRDs
// (make verify-generate checks the same in CI, after regenerating the CRDs).
func TestTheAPIPageIsUpToDate(t *testing.T) {
	root := filepath.Join("..", "..")
	crds, err := loadCRDs(filepath.Join(root, "charts", "valkey-operator", "files", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(filepath.Join(root, "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := splice(string(old), render(crds))
	if err != nil {
		t.Fatal(err)
	}
	if doc != string(old) {
		t.Error("docs/api.md differs from what hack/apidocs writes: run make generate")
	}
}

func TestWrapKeepsLinesAndBlocks(t *testing.T) {
	text := strings.Repeat("word ", 30) + "- 1. # | `a code span that is long` end"
	for _, l := range wrap(text, "- ", "  ") {
		if len([]rune(l)) > width {
			t.Errorf("line of %d runes: %q", len([]rune(l)), l)
		}
		body := strings.TrimLeft(strings.TrimPrefix(l, "- "), " ")
		if first := strings.Fields(body)[0]; blockStart.MatchString(first) {
			t.Errorf("line starts a block: %q", l)
		}
	}
}
