package charts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestTheOperatorChartsReadmeNamesEveryValue: the values table of the operator chart's README
// names every value of values.yaml (a leaf, or an object passed on as a whole: resources),
// names nothing else, and states the default of each leaf as values.yaml sets it.
func TestTheOperatorChartsReadmeNamesEveryValue(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("valkey-operator", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("valkey-operator", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // value -> its default column
	for _, line := range strings.Split(string(readme), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if _, dup := rows[name]; dup {
			t.Errorf("the README names %s twice", name)
		}
		rows[name] = strings.TrimSpace(cells[2])
	}
	if len(rows) == 0 {
		t.Fatal("the README has no values table")
	}
	var problems []string
	walk(values, "", func(path string, v any) bool {
		named := ""
		for p := path; ; {
			if _, ok := rows[p]; ok {
				named = p
				break
			}
			i := strings.LastIndex(p, ".")
			if i < 0 {
				break
			}
			p = p[:i]
		}
		switch named {
		case "":
			problems = append(problems, path+": not in the README's table")
		case path:
			if want := "`" + defaultText(v) + "`"; rows[path] != want {
				problems = append(problems, path+": the README says the default is "+rows[path]+", values.yaml "+want)
			}
		}
		return true
	})
	for name := range rows {
		if !has(values, name) {
			problems = append(problems, name+": in the README's table, not a value")
		}
	}
	slices.Sort(problems)
	if len(problems) > 0 {
		t.Errorf("charts/valkey-operator/README.md:\n%s", strings.Join(problems, "\n"))
	}
}

// defaultText is a default as the README writes it: strings bare ("" when empty), the rest as
// JSON ([] and {} for empty lists and maps).
func defaultText(v any) string {
	if s, ok := v.(string); ok && s != "" {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
