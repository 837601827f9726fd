package netfault

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// TablePrefix starts the name of every table this package creates.
const TablePrefix = "vkfsm_"

// chain is the one chain of every inet table: a filter on the output hook, which sees what
// the host's processes send.
const chain = "output"

// bridgeChain holds the same rules in the bridge table of the same name: its prerouting and
// output base chains jump to it, so it sees every frame that crosses a bridge of this
// machine (a local cluster's Pods, each in a network namespace of its own, talk to each
// other and to the host through one) whether a Pod or the host sent it.
const bridgeChain = "rules"

// maxOwnerLen keeps names short and readable; nft itself allows 255 bytes.
const maxOwnerLen = 40

// ErrClosed is returned by the methods of a Table after Close.
var ErrClosed = errors.New("netfault: table is closed")

// open holds the names of this process's open tables. Two Tables with the same name would
// share one nftables table and the first Close would silently heal the other's partitions,
// so New refuses a name that is already open.
var open = struct {
	sync.Mutex
	names map[string]bool
}{names: map[string]bool{}}

// Table is an nftables table of drop rules owned by this process. Its methods are safe for
// concurrent use.
type Table struct {
	mu     sync.Mutex
	name   string
	closed bool
}

// New creates the table vkfsm_<owner>_<pid> (owner sanitised to [a-z0-9_], e.g. a test's
// name) with an empty output-hook filter chain. It returns ErrNotRoot or ErrNoNft (wrapped
// by nothing, so that errors.Is and the message both work) when the process cannot manage
// nftables. A table left behind by a dead process that had the same pid is replaced.
func New(owner string) (*Table, error) {
	if err := preflight(); err != nil {
		return nil, err
	}
	name := tableName(owner, os.Getpid())

	open.Lock()
	defer open.Unlock()
	if open.names[name] {
		return nil, fmt.Errorf("netfault: table %s is already open in this process; Close it or use another owner", name)
	}
	// "add, delete, add" in one transaction: the add makes the delete valid whether or not a
	// stale table of that name exists, so the result is always a fresh, empty table.
	script := fmt.Sprintf(`table inet %[1]s
delete table inet %[1]s
table inet %[1]s {
	chain %[2]s {
		type filter hook output priority 0; policy accept;
	}
}
table bridge %[1]s
delete table bridge %[1]s
table bridge %[1]s {
	chain %[3]s {
	}
	chain prerouting {
		type filter hook prerouting priority 0; policy accept;
		jump %[3]s
	}
	chain output {
		type filter hook output priority 0; policy accept;
		jump %[3]s
	}
}
`, name, chain, bridgeChain)
	if err := runNft(script); err != nil {
		return nil, err
	}
	open.names[name] = true
	return &Table{name: name}, nil
}

// Name returns the nftables name of the tables (families inet and bridge).
func (t *Table) Name() string { return t.name }

// Close deletes the table and with it every rule. It is idempotent, and it succeeds when the
// table is already gone (for instance removed by hand).
func (t *Table) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	for _, fam := range []string{"inet", "bridge"} {
		if err := runNft(fmt.Sprintf("delete table %s %s\n", fam, t.name)); err != nil && !isNotFound(err) {
			return err
		}
	}
	t.closed = true
	open.Lock()
	delete(open.names, t.name)
	open.Unlock()
	return nil
}

// apply runs a script against the open table.
func (t *Table) apply(script string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	return runNft(script)
}

// tableName builds vkfsm_<owner>_<pid>. The owner is lowercased and every run of characters
// outside [a-z0-9] becomes one '_', so "TestFoo/sub case" becomes "testfoo_sub_case"; the pid
// stays the last '_'-separated field, which is what SweepStale parses.
func tableName(owner string, pid int) string {
	var b strings.Builder
	lastUnderscore := true // drops leading underscores
	for _, r := range strings.ToLower(owner) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			lastUnderscore = false
		} else if !lastUnderscore {
			b.WriteByte('_')
			lastUnderscore = true
		}
	}
	s := strings.TrimRight(b.String(), "_")
	if len(s) > maxOwnerLen {
		s = strings.TrimRight(s[:maxOwnerLen], "_")
	}
	if s == "" {
		s = "anon"
	}
	return fmt.Sprintf("%s%s_%d", TablePrefix, s, pid)
}

// addRule is the script that adds one rule to both tables: the inet table's output chain and
// the bridge table's rule chain.
func (t *Table) addRule(rule string) string {
	return fmt.Sprintf("add rule inet %[1]s %[2]s %[4]s\nadd rule bridge %[1]s %[3]s %[4]s\n", t.name, chain, bridgeChain, rule)
}
