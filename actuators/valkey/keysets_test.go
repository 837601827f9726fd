package valkey

import (
	"context"
	"fmt"
	"slices"
	"testing"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The survey's key hashes on real valkey-server 8.0 and 9.1, of nodes restarted from their
// append-only files: a node whose keys (each with its value) are all in another's is within it,
// one value changed puts a node outside, and a node with DEBUG allowed (its digest Valkey's own)
// is compared alike.
func TestTheSurveysKeysShowWhoseDataHoldsWhose(t *testing.T) {
	for i, version := range []string{"8.0", "9.1"} {
		t.Run(version, func(t *testing.T) {
			bin := valkeyBinaries(t)[version]
			ip := func(n int) string { return fmt.Sprintf("127.78.71.%d", 10*i+n) }
			const aof = "save \"\"\nappendonly yes\nappendfsync always\n"
			p := newTestPool(t)
			nodes := []machine.Node{
				{Name: "all", Valkey: restartedWith(t, p, startServerOf(t, bin, ip(1), aof, testPasswords), writeData(false, "v"))},
				{Name: "part", Valkey: restartedWith(t, p, startServerOf(t, bin, ip(2), aof, testPasswords), writePart("v"))},
				{Name: "changed", Valkey: restartedWith(t, p, startServerOf(t, bin, ip(3), aof, testPasswords), writeData(false, "w"))},
				{Name: "debug", Valkey: restartedWith(t, p, startServerOf(t, bin, ip(4), aof+"enable-debug-command yes\n", testPasswords), writeData(true, "v"))},
			}
			for _, n := range nodes {
				if int64(len(n.Valkey.KeyHashes)) != n.Valkey.Keys {
					t.Fatalf("%s: %d key hashes for %d keys", n.Name, len(n.Valkey.KeyHashes), n.Valkey.Keys)
				}
			}
			machine.CompareKeys(nodes)
			for i, want := range [][]string{{"debug"}, {"all", "debug"}, nil, {"all"}} {
				if v := nodes[i].Valkey; !v.KeysCompared || !slices.Equal(v.KeysWithin, want) {
					t.Errorf("%s: compared %v, within %v, want within %v", nodes[i].Name, v.KeysCompared, v.KeysWithin, want)
				}
			}
		})
	}
}

// A node's keys are not read past the survey's bounds: its data is then compared by count.
func TestTheSurveyReadsNoKeysPastItsBounds(t *testing.T) {
	p := newTestPool(t)
	s := startServerWith(t, "127.78.71.30", "save \"\"\nappendonly yes\nappendfsync always\n")
	v := restartedWith(t, p, s, writeData(false, "v"))
	ctx := context.Background()
	if _, hashes := p.dataEvidence(ctx, Addr(s.ip), v.Keys, 1<<20, true, digestBounds{keys: v.Keys - 1, bytes: 1 << 20}); hashes != nil {
		t.Errorf("more keys than the bound: %d hashes read", len(hashes))
	}
	if _, hashes := p.dataEvidence(ctx, Addr(s.ip), v.Keys, 1<<20+1, true, digestBounds{keys: v.Keys, bytes: 1 << 20}); hashes != nil {
		t.Errorf("a data set past the bound: %d hashes read", len(hashes))
	}
	if _, hashes := p.dataEvidence(ctx, Addr(s.ip), v.Keys, 1<<20, true, digestBounds{keys: v.Keys, bytes: 1 << 20}); int64(len(hashes)) != v.Keys {
		t.Errorf("within the bounds: %d hashes for %d keys", len(hashes), v.Keys)
	}
}

// writePart writes two of writeData's keys, s2 with value.
func writePart(value string) func(*testing.T, vk.Client) {
	return func(t *testing.T, c vk.Client) {
		t.Helper()
		b := c.B()
		for _, r := range c.DoMulti(context.Background(), b.Set().Key("s1").Value("one").Build(), b.Set().Key("s2").Value(value).Build()) {
			if err := r.Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
