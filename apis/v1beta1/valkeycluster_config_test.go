package v1beta1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// configFieldDoc returns the doc comment (markers included) of ValkeyClusterSpec.Config as
// written in valkeycluster_types.go, the source controller-gen reads.
func configFieldDoc(t *testing.T) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "valkeycluster_types.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "ValkeyClusterSpec" {
			return true
		}
		for _, field := range ts.Type.(*ast.StructType).Fields.List {
			if len(field.Names) == 1 && field.Names[0].Name == "Config" && field.Doc != nil {
				var lines []string
				for _, c := range field.Doc.List {
					lines = append(lines, strings.TrimPrefix(c.Text, "//"))
				}
				doc = strings.Join(lines, "\n")
			}
		}
		return false
	})
	if doc == "" {
		t.Fatal("no doc comment on ValkeyClusterSpec.Config in valkeycluster_types.go")
	}
	return doc
}

// celListRE matches the CEL list literal after `k.lowerAscii() in` in a marker.
var celListRE = regexp.MustCompile(`lowerAscii\(\) in \[([^\]]*)\]`)

// TestCELOwnedListMatchesGoSlice checks that every list of owned directives in the CEL
// markers of spec.config (the rule, and the message that names the offending key) is
// exactly OperatorOwnedDirectives: a directive added to one and not the other would be
// refused by the API server but rendered by the operator, or the other way round.
func TestCELOwnedListMatchesGoSlice(t *testing.T) {
	doc := configFieldDoc(t)
	var lists int
	for _, line := range strings.Split(doc, "\n") {
		// Only the owned-directive rule: other rules check the values of lists of their own.
		if !strings.Contains(line, "+kubebuilder:validation:XValidation") || !strings.Contains(line, "a directive the operator owns") {
			continue
		}
		for _, m := range celListRE.FindAllStringSubmatch(line, -1) {
			lists++
			var got []string
			for _, item := range strings.Split(m[1], ",") {
				item = strings.TrimSpace(item)
				if len(item) < 2 || item[0] != '\'' || item[len(item)-1] != '\'' {
					t.Fatalf("list item %q is not a single-quoted CEL string", item)
				}
				got = append(got, item[1:len(item)-1])
			}
			if !slices.Equal(got, OperatorOwnedDirectives) {
				t.Errorf("CEL list differs from OperatorOwnedDirectives:\n CEL: %v\n Go:  %v", got, OperatorOwnedDirectives)
			}
		}
	}
	// The rule that refuses, and the messageExpression that names the key.
	if lists != 2 {
		t.Errorf("found %d owned-directive lists in the CEL markers of Config, want 2", lists)
	}
}

// TestConfigDocListsOwnedDirectives checks the list users read in kubectl explain (the
// field's description) against OperatorOwnedDirectives.
func TestConfigDocListsOwnedDirectives(t *testing.T) {
	doc := strings.Join(strings.Fields(configFieldDoc(t)), " ")
	const intro = "are refused here: "
	i := strings.Index(doc, intro)
	if i < 0 {
		t.Fatalf("Config's doc comment has no %q", intro)
	}
	list, _, found := strings.Cut(doc[i+len(intro):], ".")
	if !found {
		t.Fatalf("Config's doc comment does not end the list after %q with a period", intro)
	}
	listed := strings.Split(list, ", ")
	if !slices.Equal(listed, OperatorOwnedDirectives) {
		t.Errorf("Config's doc comment lists\n %v\nwant\n %v", listed, OperatorOwnedDirectives)
	}
}

// TestAPIDocListsOwnedDirectives checks docs/api.md names every owned directive.
func TestAPIDocListsOwnedDirectives(t *testing.T) {
	data, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range OperatorOwnedDirectives {
		if !strings.Contains(string(data), "`"+d+"`") {
			t.Errorf("docs/api.md does not list `%s`", d)
		}
	}
}

func TestOperatorOwnedDirectivesShape(t *testing.T) {
	seen := map[string]bool{}
	valid := regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	for _, d := range OperatorOwnedDirectives {
		if !valid.MatchString(d) {
			t.Errorf("%q is not a lower-case directive name", d)
		}
		if seen[d] {
			t.Errorf("%q is listed twice", d)
		}
		seen[d] = true
	}
}

func TestIsOperatorOwned(t *testing.T) {
	for name, want := range map[string]bool{
		"bind": true, "BIND": true, "AppendOnly": true, "Min-Slaves-To-Write": true, "user": true,
		"maxmemory": false, "maxmemory-samples": false, "appendfsync": false, "binds": false, "": false,
	} {
		if got := IsOperatorOwned(name); got != want {
			t.Errorf("IsOperatorOwned(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestLookupConfig(t *testing.T) {
	cases := []struct {
		name   string
		config map[string]ConfigValue
		key    string
		want   ConfigValue
		found  bool
	}{
		{"absent", map[string]ConfigValue{"hz": "10"}, "maxmemory", "", false},
		{"nil map", nil, "maxmemory", "", false},
		{"exact", map[string]ConfigValue{"maxmemory": "1gb"}, "maxmemory", "1gb", true},
		{"other case in map", map[string]ConfigValue{"MaxMemory": "1gb"}, "maxmemory", "1gb", true},
		{"other case asked", map[string]ConfigValue{"maxmemory": "1gb"}, "MAXMEMORY", "1gb", true},
		{"lower case wins", map[string]ConfigValue{"MAXMEMORY": "2gb", "maxmemory": "1gb", "MaxMemory": "3gb"}, "maxmemory", "1gb", true},
		{"first spelling wins", map[string]ConfigValue{"maxMemory": "2gb", "MaxMemory": "3gb"}, "maxmemory", "3gb", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 20 { // map order must not matter
				got, found := LookupConfig(c.config, c.key)
				if got != c.want || found != c.found {
					t.Fatalf("LookupConfig = %q, %v; want %q, %v", got, found, c.want, c.found)
				}
			}
		})
	}
}
