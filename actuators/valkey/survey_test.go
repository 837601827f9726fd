package valkey

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/internal/resp"
	"github.com/valkey-fsm/valkey-operator/machine"
)

func TestHistoryIDMapsValkeysNullIDToNone(t *testing.T) {
	for in, want := range map[string]string{
		"0000000000000000000000000000000000000000": "",
		"": "",
		"70ad8e91c2a96be48b41edab5b9c48636a6b8cac": "70ad8e91c2a96be48b41edab5b9c48636a6b8cac",
		"0000000000000000000000000000000000000001": "0000000000000000000000000000000000000001",
	} {
		if got := historyID(in); got != want {
			t.Errorf("historyID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKeyspaceKeysAddsUpEveryDatabase(t *testing.T) {
	info := parseInfo("# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=0,subexpiry=0\r\ndb5:keys=4,expires=0,avg_ttl=0\r\n# Replication\r\nmaster_repl_offset:77\r\n")
	if got := keyspaceKeys(info); got != 7 {
		t.Fatalf("keys = %d, want 7", got)
	}
	if got := keyspaceKeys(parseInfo("# Keyspace\r\n")); got != 0 {
		t.Fatalf("an empty keyspace has %d keys", got)
	}
}

// TestAnAppendOnlyRestartKeepsTheKeysButNotThePlaceInTheHistory pins the Valkey behaviour the
// machine is built on (machine/lineage.go): a node restarted from its append-only file keeps
// its keys but reports a fresh replication ID at offset 0, exactly as an empty node does, so
// only the key count tells the two apart. If a Valkey release starts restoring the ID and
// offset from the append-only file, this fails, and the machine could measure such nodes.
func TestAnAppendOnlyRestartKeepsTheKeysButNotThePlaceInTheHistory(t *testing.T) {
	ctx := context.Background()
	p := newTestPool(t)
	s := startServerWith(t, "127.78.0.7", "save \"\"\nappendonly yes\nappendfsync always\n")
	v := survey(t, p, s)
	if err := p.Promote(ctx, s.ip, v.RunID); err != nil {
		t.Fatal(err)
	}
	if err := p.OpenWrites(ctx, s.ip, v.RunID); err != nil {
		t.Fatal(err)
	}
	app := appClient(t, s)
	for i := 0; i < 5; i++ {
		if err := app.Do(ctx, app.B().Set().Key(fmt.Sprintf("k%d", i)).Value("v").Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	before := survey(t, p, s)
	if before.Keys != 5 || before.Offset == 0 || before.ReplID == "" {
		t.Fatalf("before the restart: want 5 keys at an offset of a history, got %+v", before)
	}
	s.restart(t)
	var after machine.Valkey
	eventually(t, "restarted node loaded", func() bool { after = survey(t, p, s); return !after.Loading })
	if after.Keys != 5 {
		t.Fatalf("the append-only file should bring back the 5 keys, got %+v", after)
	}
	if after.Offset != 0 || after.ReplID == before.ReplID || after.ReplID2 != "" {
		t.Fatalf("Valkey now keeps the place in the history across an append-only restart (%+v, was %+v): the machine can measure such nodes, see machine/lineage.go", after, before)
	}
}

// TestLiveDirectivesAreSettable sets every live directive, at the value the server has, in
// one CONFIG SET on a real valkey-server: a name Valkey does not know or refuses to change at
// run time fails here rather than in a user's cluster.
func TestLiveDirectivesAreSettable(t *testing.T) {
	ctx := context.Background()
	p := newTestPool(t)
	s := startServerWith(t, "127.78.0.9", "save \"\"\nappendonly no\n")
	v := survey(t, p, s)
	c := dialRaw(t, s.ip, UserOperator, testPasswords.Operator)
	live := map[string]string{}
	for name := range liveDirectives {
		live[name] = configGet(t, c, name)
	}
	if err := p.ApplyLive(ctx, s.ip, v.RunID, live); err != nil {
		t.Fatalf("CONFIG SET of every live directive at its current value: %v", err)
	}
	if err := p.ApplyLive(ctx, s.ip, v.RunID, map[string]string{"slowlog-max-len": "77"}); err != nil {
		t.Fatal(err)
	}
	if got := configGet(t, c, "slowlog-max-len"); got != "77" {
		t.Fatalf("slowlog-max-len = %q after ApplyLive, want 77", got)
	}
}

// configGet reads one directive with CONFIG GET (name, value).
func configGet(t *testing.T, c *resp.Conn, name string) string {
	t.Helper()
	v, err := c.Do(2*time.Second, "CONFIG", "GET", name)
	pair, _ := v.([]any)
	if err != nil || len(pair) != 2 {
		t.Fatalf("CONFIG GET %s: Valkey does not know it (%v, %v)", name, v, err)
	}
	return fmt.Sprint(pair[1])
}

func TestSplitKeepsOnlyRestartDirectivesInTheRevision(t *testing.T) {
	in := ConfigInput{MaxMemory: "100mb", Extra: map[string]string{"HZ": "20", "databases": "32", "min-replicas-to-write": "1"}}
	restart, live := Split(in)
	if len(restart.Extra) != 1 || restart.Extra["databases"] != "32" || restart.MaxMemory != "" {
		t.Fatalf("restart part: %+v", restart)
	}
	if live["hz"] != "20" || live["maxmemory"] != "100mb" || live["min-replicas-to-write"] != "1" || len(live) != 3 {
		t.Fatalf("live part: %v", live)
	}
	if LiveHash(live) == LiveHash(map[string]string{"hz": "21", "maxmemory": "100mb", "min-replicas-to-write": "1"}) {
		t.Fatal("a changed value must change the hash")
	}
}

// INFO names numbered fields (db0, slave1) beside others that share the prefix
// (slave_repl_offset, slave_read_only): only the first are databases and replicas.
func TestNumberedFieldsAreThePrefixAndDigitsOnly(t *testing.T) {
	for k, want := range map[string]bool{"db0": true, "db15": true, "slave1": true, "db": false, "dbx": false, "db1x": false, "slave_repl_offset": false, "slave_read_only": false, "slaves": false} {
		prefix := "db"
		if k[0] == 's' {
			prefix = "slave"
		}
		if got := numbered(k, prefix); got != want {
			t.Errorf("numbered(%q, %q) = %v, want %v", k, prefix, got, want)
		}
	}
}

// A line longer than any buffer (here 100 KiB) does not hide the fields after it.
func TestALongInfoLineHidesNoField(t *testing.T) {
	info := parseInfo("# Modules\r\nmodule:name=" + strings.Repeat("x", 100<<10) + "\r\n# Replication\r\nrole:master\r\nmaster_repl_offset:77\r\n")
	if info["role"] != "master" || info["master_repl_offset"] != "77" {
		t.Fatalf("fields after a long line: role %q, offset %q", info["role"], info["master_repl_offset"])
	}
}
