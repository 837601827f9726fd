package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
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

// TestCELOwnedListMatchesGoSlice checks that every list of owned directives in v1alpha1's CEL
// markers of spec.config (the rule, and the message that names the offending key) is exactly
// v1beta1.OperatorOwnedDirectives, the operator's list: the served spoke must refuse what the
// operator renders itself, or a directive added to one and not the other would be refused by
// the API server but rendered by the operator, or the other way round.
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
			if !slices.Equal(got, v1beta1.OperatorOwnedDirectives) {
				t.Errorf("CEL list differs from v1beta1.OperatorOwnedDirectives:\n CEL: %v\n Go:  %v", got, v1beta1.OperatorOwnedDirectives)
			}
		}
	}
	// The rule that refuses, and the messageExpression that names the key.
	if lists != 2 {
		t.Errorf("found %d owned-directive lists in the CEL markers of Config, want 2", lists)
	}
}

// TestConfigDocListsOwnedDirectives checks the list users read in kubectl explain (the
// field's description) against v1beta1.OperatorOwnedDirectives.
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
	if !slices.Equal(listed, v1beta1.OperatorOwnedDirectives) {
		t.Errorf("Config's doc comment lists\n %v\nwant\n %v", listed, v1beta1.OperatorOwnedDirectives)
	}
}
