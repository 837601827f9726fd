package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// waitingSources are the packages that write status.waiting: the machine's decisions
// (Decision.Waiting, actionList.wait), the operator's turns (status.Waiting, waitFor, the TLS
// gate's why, and the backup schedule's refusal), and the owned objects' errors the operator
// puts there as they are (those that wrap ErrAuthLost, ErrExistingSecret or ErrNotOurs: the
// user's to fix).
var waitingSources = []string{"../machine", "../operator/reconcile/cluster", "../operator/reconcile/backups", "../actuators/kube"}

// userErrors are the errors of actuators/kube whose messages the operator writes to
// status.waiting.
var userErrors = map[string]bool{"ErrAuthLost": true, "ErrExistingSecret": true, "ErrNotOurs": true}

// minKey is the shortest text that names a message family: shorter fragments (": ", "; ") are
// the glue between parts, not a message.
const minKey = 12

// TestEveryWaitingMessageIsInTroubleshooting finds, in the source of the packages that write
// status.waiting, every message that can end up there: the arguments of the machine's
// b.wait(...), Decision{Waiting: ...}, the operator's vc.Status.Waiting = ... and
// r.waitFor(..., why), followed through the variables and the same package's functions they
// come from (a message built with fmt.Sprintf is its format, the verbs its variable parts).
// Each message's longest constant part must appear in docs/troubleshooting.md, where a user
// reads what it means and what to do. A new message without an entry fails here, naming the
// file and line it is written at.
func TestEveryWaitingMessageIsInTroubleshooting(t *testing.T) {
	page, err := os.ReadFile("troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	found := waitingMessages(t)
	if len(found) < 50 {
		t.Fatalf("found only %d waiting messages: the extraction is broken", len(found))
	}
	var missing []string
	for _, m := range found {
		if !strings.Contains(string(page), m.key) {
			missing = append(missing, m.where+": "+strconv.Quote(m.key))
		}
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	for _, m := range missing {
		t.Errorf("status.waiting message with no entry in docs/troubleshooting.md: %s", m)
	}
	t.Logf("%d waiting messages, %d without an entry", len(found), len(missing))
}

type waitingMessage struct {
	where string // file:line of the sink
	key   string // the message's longest constant part
}

// waitingMessages parses the sources and resolves every sink's messages.
func waitingMessages(t *testing.T) []waitingMessage {
	t.Helper()
	var out []waitingMessage
	for _, dir := range waitingSources {
		p := parsePackage(t, dir)
		for _, file := range p.files {
			for _, decl := range file.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					for _, e := range sinks(n) {
						where := p.fset.Position(e.Pos())
						for _, msg := range p.resolve(fn, e, 0) {
							if key := longestPart(msg); len(key) >= minKey {
								out = append(out, waitingMessage{filepath.Base(where.Filename) + ":" + strconv.Itoa(where.Line), key})
							}
						}
					}
					return true
				})
			}
		}
	}
	return out
}

// sinks are the expressions a node writes into status.waiting.
func sinks(n ast.Node) []ast.Expr {
	switch n := n.(type) {
	case *ast.CallExpr:
		if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
			switch {
			case sel.Sel.Name == "wait" && len(n.Args) == 1:
				return n.Args
			case sel.Sel.Name == "waitFor" && len(n.Args) == 3:
				return n.Args[2:]
			case sel.Sel.Name == "Errorf":
				for _, a := range n.Args[1:] {
					if id, ok := a.(*ast.Ident); ok && userErrors[id.Name] {
						return []ast.Expr{n}
					}
				}
			}
		}
	case *ast.KeyValueExpr:
		if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Waiting" {
			return []ast.Expr{n.Value}
		}
	case *ast.AssignStmt:
		var out []ast.Expr
		for i, l := range n.Lhs {
			if sel, ok := l.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Waiting" || sel.Sel.Name == "why") && i < len(n.Rhs) {
				out = append(out, n.Rhs[i])
			}
		}
		return out
	}
	return nil
}

type pkg struct {
	fset  *token.FileSet
	files []*ast.File
	funcs map[string][]*ast.FuncDecl // by name: functions and methods alike
	// active are the variables being resolved (function.variable): a variable built from
	// itself (why = why + "; " + more) stands for a wildcard where it refers to itself.
	active map[string]bool
}

func parsePackage(t *testing.T, dir string) *pkg {
	t.Helper()
	p := &pkg{fset: token.NewFileSet(), funcs: map[string][]*ast.FuncDecl{}, active: map[string]bool{}}
	matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range matches {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(p.fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		p.files = append(p.files, f)
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				p.funcs[fn.Name.Name] = append(p.funcs[fn.Name.Name], fn)
			}
		}
	}
	return p
}

// A message is its constant parts in order; an empty string between them stands for a part
// only known at run time.
type message []string

const wildcard = ""

// maxDepth bounds how far variables and calls are followed.
const maxDepth = 12

// resolve returns the messages e can hold inside fn. Parts it cannot follow (parameters,
// errors from other packages, joined lists) are wildcards; each argument of a format and each
// operand of a concatenation that is itself a message is resolved as a message of its own too
// (a reason inside a reason has its own entry).
func (p *pkg) resolve(fn *ast.FuncDecl, e ast.Expr, depth int) []message {
	if depth > maxDepth {
		return []message{{wildcard}}
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			if s, err := strconv.Unquote(e.Value); err == nil {
				return []message{{s}}
			}
		}
	case *ast.ParenExpr:
		return p.resolve(fn, e.X, depth)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			return concat(p.resolve(fn, e.X, depth+1), p.resolve(fn, e.Y, depth+1))
		}
	case *ast.Ident:
		return p.variable(fn, e.Name, depth)
	case *ast.CallExpr:
		return p.call(fn, e, 0, depth)
	}
	return []message{{wildcard}}
}

// call resolves result idx of a call: a format, a string helper, or a function of the package.
func (p *pkg) call(fn *ast.FuncDecl, c *ast.CallExpr, idx, depth int) []message {
	name := ""
	switch f := c.Fun.(type) {
	case *ast.Ident:
		name = f.Name
		if name == "append" {
			// A list of reasons: each element appended is a message of its own.
			var out []message
			for _, a := range c.Args[1:] {
				out = append(out, p.resolve(fn, a, depth+1)...)
			}
			return append(out, message{wildcard})
		}
	case *ast.SelectorExpr:
		name = f.Sel.Name
		if x, ok := f.X.(*ast.Ident); ok {
			switch x.Name + "." + name {
			case "fmt.Sprintf", "fmt.Errorf":
				if len(c.Args) == 0 {
					break
				}
				if format, ok := constString(c.Args[0]); ok {
					return []message{splitFormat(format)}
				}
			case "strings.TrimPrefix", "strings.TrimSuffix", "strings.TrimSpace":
				return p.resolve(fn, c.Args[0], depth+1)
			case "strings.Join":
				// The elements of the list, each a message of its own.
				return append(p.resolve(fn, c.Args[0], depth+1), message{wildcard})
			}
			if x.Name != "d" && x.Name != "r" && x.Name != "w" && x.Name != "b" && x.Name != "op" && x.Name != "p" {
				// Another package's function, or a method of a value not the package's own
				// receivers: its text is not followed here.
				if _, own := p.funcs[name]; !own {
					return []message{{wildcard}}
				}
			}
		}
	}
	decls := p.funcs[name]
	if len(decls) == 0 {
		return []message{{wildcard}}
	}
	var out []message
	for _, d := range decls {
		if d.Body == nil {
			continue
		}
		ast.Inspect(d.Body, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok {
				return false // a closure's returns are not the function's
			}
			if r, ok := n.(*ast.ReturnStmt); ok && idx < len(r.Results) {
				out = append(out, p.resolve(d, r.Results[idx], depth+1)...)
			}
			return true
		})
	}
	if len(out) == 0 {
		return []message{{wildcard}}
	}
	return out
}

// variable resolves what a local variable of fn is assigned: each assignment is one message.
func (p *pkg) variable(fn *ast.FuncDecl, name string, depth int) []message {
	key := fn.Name.Name + "." + name
	if p.active[key] {
		return []message{{wildcard}}
	}
	p.active[key] = true
	defer delete(p.active, key)
	var out []message
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok {
			return true
		}
		for i, l := range as.Lhs {
			id, ok := l.(*ast.Ident)
			if !ok || id.Name != name {
				continue
			}
			switch {
			case len(as.Rhs) == len(as.Lhs):
				msgs := p.resolve(fn, as.Rhs[i], depth+1)
				if as.Tok == token.ADD_ASSIGN {
					msgs = concat([]message{{wildcard}}, msgs)
				}
				out = append(out, msgs...)
			case len(as.Rhs) == 1:
				if c, ok := as.Rhs[0].(*ast.CallExpr); ok {
					out = append(out, p.call(fn, c, i, depth+1)...)
				}
			}
		}
		return true
	})
	if len(out) == 0 {
		return []message{{wildcard}} // a parameter, or a var never assigned a message
	}
	return out
}

// concat joins every message of a with every one of b (bounded: beyond it, each side stands
// alone, which still checks each side's own parts).
func concat(a, b []message) []message {
	if len(a)*len(b) > 64 {
		return append(slices.Clone(a), b...)
	}
	var out []message
	for _, x := range a {
		for _, y := range b {
			m := append(slices.Clone(x), y...)
			out = append(out, m)
		}
	}
	return out
}

// constString is a string constant written as a literal or a sum of literals.
func constString(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		s, err := strconv.Unquote(e.Value)
		return s, err == nil && e.Kind == token.STRING
	case *ast.ParenExpr:
		return constString(e.X)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		x, ok := constString(e.X)
		if !ok {
			return "", false
		}
		y, ok := constString(e.Y)
		return x + y, ok
	}
	return "", false
}

// splitFormat turns a format into its constant parts with a wildcard for each verb.
func splitFormat(format string) message {
	var m message
	var cur strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			cur.WriteByte(format[i])
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			cur.WriteByte('%')
			i++
			continue
		}
		m = append(m, cur.String(), wildcard)
		cur.Reset()
		for i++; i < len(format) && !strings.ContainsRune("vsdqxXfFgGeEtTbcoOUpw", rune(format[i])); i++ {
		}
	}
	return append(m, cur.String())
}

// longestPart is a message's longest constant part, trimmed of the punctuation and spaces
// that join it to its variable parts.
func longestPart(m message) string {
	best := ""
	for _, part := range m {
		s := strings.Trim(part, " :;,.()'\"")
		if len(s) > len(best) {
			best = s
		}
	}
	return best
}
