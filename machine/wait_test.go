package machine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The words of representative reasons, pinned: status.waiting, the Ready condition and the
// simulator's digests carry them, so a change to them is a change users see.
func TestWaitRendersTheWordsUsersRead(t *testing.T) {
	until := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	cases := []struct {
		w    Wait
		want string
	}{
		{Wait{}, ""},
		{Wait{Kind: WaitNoNodeAnswersYet, Shard: 2}, "shard 2: no node answers yet"},
		{Wait{Kind: WaitHibernateCatchUp, Shard: 0, Node: "s0-1", Peer: "s0-0", N: 100, Of: 120}, "hibernating: s0-1 catching up with s0-0 (offset 100 of 120) before the pods stop"},
		{Wait{Kind: WaitOldPrimaryMayWrite, Shard: 0, Node: "s0-0", Until: until}, "old primary s0-0 may accept writes until 03:04:05.600"},
		{Wait{Kind: WaitStrayTakenOver, Shard: 1, Node: "s1-1", Peer: "s1-0", Detail: "deposed", N: 3}, "shard 1: s1-0, the recorded primary, takes the shard's slots over from s1-1 with a newer epoch: s1-1, deposed, holds 3 key(s) there that are not the shard's data, and resyncs from s1-0 once it serves none"},
		{Wait{Kind: WaitOpenSlotNoPrimary, N: 100, Shard: 0, ToShard: 3}, "slot 100 is open between shards 0 and 3, and one of them has no primary answering"},
		{Wait{Kind: WaitScaleBlocked, Detail: "blocked", Also: "not converged"}, "blocked; first: not converged"},
		{Wait{Kind: WaitScaleBlocked, Detail: "blocked"}, "blocked"},
		{Wait{Kind: WaitRotationQueued, ID: "b", Other: "a"}, "password rotation b waits for a to complete"},
		{Wait{Kind: WaitDataChoice, Shard: 0, Detail: "shard 0: the nodes' data forked"}, "shard 0: the nodes' data forked"},
		{Wait{Kind: WaitDeposedMayHoldTheLine, Shard: 1, Node: "s1-0", Peer: "s1-2", N: 2, Of: 1, Detail: "primary s1-1 restarted"},
			"primary s1-1 restarted; shard 1: no failover: s1-0, deposed by a failover and restarted from its append-only file, holds 2 keys, more than s1-2 (1) and than the shard had when it was deposed: " +
				"they may be the shard's writes it synced since, or writes off the line it took before it was deposed, and nothing observed tells which. " +
				"Electing s1-2 could lose writes acknowledged with WAIT that only s1-0 holds. To elect s1-2 and give up the keys only s1-0 holds, name s1-0 in the annotation valkey.fsm.dev/failover-without"},
	}
	for _, c := range cases {
		if got := c.w.String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.w.Kind, got, c.want)
		}
	}
}

// Every kind has a name and words: a kind added to the set without its case in String would
// render only its Detail, empty here.
func TestEveryWaitKindRendersWords(t *testing.T) {
	names := map[string]bool{}
	for _, k := range WaitKinds() {
		name := k.String()
		if name == "" || strings.HasPrefix(name, "WaitKind(") || names[name] {
			t.Errorf("kind %d: name %q missing or not unique", k, name)
		}
		names[name] = true
		w := Wait{Kind: k, Detail: "detail", Node: "s0-0", Peer: "s0-1", ID: "id", Other: "other", Also: "also"}
		if got := w.String(); got == "" || strings.Contains(got, "%!") {
			t.Errorf("%s renders %q", k, got)
		}
	}
}

// Every kind is given somewhere: by the machine's rules, or (WaitOperator) by the operator's
// turn that cannot observe. A kind no rule gives is dead words.
func TestEveryWaitKindIsGiven(t *testing.T) {
	used := map[string]bool{}
	read := func(dir string, skip func(string) bool) {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") || skip(filepath.Base(f)) {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.Ident:
					used[x.Name] = true
				case *ast.SelectorExpr:
					used[x.Sel.Name] = true
				}
				return true
			})
		}
	}
	read(".", func(name string) bool { return name == "wait.go" })
	read(filepath.Join("..", "operator", "reconcile", "cluster"), func(string) bool { return false })
	for _, k := range WaitKinds() {
		if name := "Wait" + k.String(); !used[name] {
			t.Errorf("%s is given by no rule", name)
		}
	}
}
