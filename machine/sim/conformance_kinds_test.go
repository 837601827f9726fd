package sim

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/conformance"
)

// Every action the machine can decide has a row in the actuator contract: the kinds are read
// from the machine's source (every Kind method returning a literal), the rows' kinds from what
// the tables apply to the simulated worlds.
func TestEveryActionKindHasAConformanceRow(t *testing.T) {
	applied := map[string]bool{}
	w, err := NewConformanceWorld(Topologies["replication-persistent"])
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(context.Background(), recordingWorld{w, applied}, func(conformance.Row, error) {})
	cw, err := NewClusterConformanceWorld(Topologies["cluster"])
	if err != nil {
		t.Fatal(err)
	}
	conformance.RunCluster(context.Background(), recordingClusterWorld{cw, applied}, func(conformance.Row, error) {})

	kinds := actionKinds(t)
	if len(kinds) < 20 {
		t.Fatalf("found only the action kinds %v in the machine's source", kinds)
	}
	for _, k := range kinds {
		if !applied[k] {
			t.Errorf("no conformance row applies a %s action", k)
		}
	}
}

type recordingWorld struct {
	conformance.World
	applied map[string]bool
}

func (r recordingWorld) Apply(ctx context.Context, a machine.Action) error {
	r.applied[a.Kind()] = true
	return r.World.Apply(ctx, a)
}

type recordingClusterWorld struct {
	conformance.ClusterWorld
	applied map[string]bool
}

func (r recordingClusterWorld) Apply(ctx context.Context, a machine.Action) error {
	r.applied[a.Kind()] = true
	return r.ClusterWorld.Apply(ctx, a)
}

// actionKinds are the kinds the machine's actions name: every method Kind() of package machine
// (its non-test files) that returns a string literal.
func actionKinds(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
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
					t.Fatal(err)
				}
				kinds = append(kinds, k)
			}
		}
	}
	sort.Strings(kinds)
	return kinds
}
