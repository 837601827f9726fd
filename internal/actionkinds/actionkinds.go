// Package actionkinds reads the kinds of the machine's actions from its source, for the tests
// that must cover every kind (an actuator per kind, a conformance row per kind): a kind added
// to the machine then fails them instead of a cluster's turn. Only tests import it.
package actionkinds

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// FromSource returns, sorted, the string every `Kind()` method of the Go package in dir (its
// non-test files) returns as a literal.
func FromSource(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var kinds []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "Kind" || fn.Body == nil || len(fn.Body.List) != 1 {
				continue
			}
			ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
			if !ok || len(ret.Results) != 1 {
				continue
			}
			if lit, ok := ret.Results[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				k, err := strconv.Unquote(lit.Value)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", fset.Position(lit.Pos()), err)
				}
				kinds = append(kinds, k)
			}
		}
	}
	sort.Strings(kinds)
	return kinds, nil
}
