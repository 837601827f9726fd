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
				render := isWaitString(fn)
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					found := sinks(n)
					if r, ok := n.(*ast.ReturnStmt); ok && render {
						found = r.Results
					}
					for _, e := range found {
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

// isWaitString is the machine's Wait.String, whose returns are the words of every reason it
// gives (the kinds' texts; a reason another rule words comes in as a Wait's Detail).
func isWaitString(fn *ast.FuncDecl) bool {
	if fn.Name.Name != "String" || fn.Recv == nil || len(fn.Recv.List) != 1 {
		return false
	}
	id, ok := fn.Recv.List[0].Type.(*ast.Ident)
	return ok && id.Name == "Wait"
}

// waitWords are the fields of a machine.Wait that carry another rule's words.
var waitWords = map[string]bool{"Detail": true, "Also": true}

// framedKinds are the wait kinds whose text is a format (a case of Wait.String that returns
// fmt.Sprintf(...)): the words a Wait of such a kind carries are a format's argument, not
// followed (see resolve). Filled from the machine's source.
var framedKinds = map[string]bool{}

// findFramedKinds reads Wait.String's cases.
func findFramedKinds(fn *ast.FuncDecl) {
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		cc, ok := n.(*ast.CaseClause)
		if !ok {
			return true
		}
		leads := false
		ast.Inspect(cc, func(n ast.Node) bool {
			if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
				if _, format := r.Results[0].(*ast.CallExpr); !format {
					leads = true
				}
			}
			return true
		})
		for _, e := range cc.List {
			if id, ok := e.(*ast.Ident); ok && !leads {
				framedKinds[id.Name] = true
			}
		}
		return false
	})
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
				if isWaitString(fn) {
					findFramedKinds(fn)
				}
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
	case *ast.CompositeLit:
		// A machine.Wait: its kind's words are in Wait.String; the words it carries from
		// another rule are messages of their own.
		if lastName(e.Type) != "Wait" {
			break
		}
		var out []message
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok && kv.Key.(*ast.Ident).Name == "Kind" && framedKinds[lastName(kv.Value)] {
				return []message{{wildcard}}
			}
		}
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok && waitWords[k.Name] {
					out = append(out, p.resolve(fn, kv.Value, depth+1)...)
				}
			}
		}
		return append(out, message{wildcard})
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
	if sel, ok := c.Fun.(*ast.SelectorExpr); ok && len(decls) > 1 {
		// A method several types have (String above all): only the one of the value's own
		// type, where the function says what that is.
		decls = p.methodsOf(decls, p.typeOf(fn, sel.X))
	}
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

// lastName is the name an identifier or a qualified identifier (machine.WaitX) ends with.
func lastName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
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

// methodsOf keeps the methods whose receiver is of type named typ; none when typ is unknown.
func (p *pkg) methodsOf(decls []*ast.FuncDecl, typ string) []*ast.FuncDecl {
	var out []*ast.FuncDecl
	for _, d := range decls {
		if typ != "" && d.Recv != nil && len(d.Recv.List) == 1 && typeName(d.Recv.List[0].Type) == typ {
			out = append(out, d)
		}
	}
	return out
}

// typeOf is the name of the type of x inside fn, where it is written down: a parameter or the
// receiver, a var declaration, a composite literal, or a result of a function of the package.
// "" when it is not.
func (p *pkg) typeOf(fn *ast.FuncDecl, x ast.Expr) string {
	id, ok := x.(*ast.Ident)
	if !ok {
		return ""
	}
	var fields []*ast.Field
	if fn.Recv != nil {
		fields = append(fields, fn.Recv.List...)
	}
	fields = append(fields, fn.Type.Params.List...)
	for _, f := range fields {
		for _, n := range f.Names {
			if n.Name == id.Name {
				return typeName(f.Type)
			}
		}
	}
	found := ""
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if found != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.ValueSpec:
			for _, name := range n.Names {
				if name.Name == id.Name && n.Type != nil {
					found = typeName(n.Type)
				}
			}
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if lid, ok := l.(*ast.Ident); !ok || lid.Name != id.Name {
					continue
				}
				rhs, idx := n.Rhs[0], i
				if len(n.Rhs) == len(n.Lhs) {
					rhs, idx = n.Rhs[i], 0
				}
				found = p.resultType(rhs, idx)
			}
		}
		return true
	})
	return found
}

// resultType is the type name of result idx of e: a composite literal's type, or what the
// package's function called declares.
func (p *pkg) resultType(e ast.Expr, idx int) string {
	switch e := e.(type) {
	case *ast.CompositeLit:
		return typeName(e.Type)
	case *ast.CallExpr:
		name := lastName(e.Fun)
		for _, d := range p.funcs[name] {
			if r := d.Type.Results; r != nil {
				i := 0
				for _, f := range r.List {
					for range max(1, len(f.Names)) {
						if i == idx {
							return typeName(f.Type)
						}
						i++
					}
				}
			}
		}
	}
	return ""
}

// typeName is the name a type expression ends with, pointers taken off.
func typeName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	return lastName(e)
}
