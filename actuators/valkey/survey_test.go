package valkey

import (
	"context"
	"fmt"
	"testing"

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
