package valkey

import (
	"context"
	"fmt"
	"strings"
	"testing"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The data digest on real valkey-server 8.0 and 9.1, of nodes restarted from their append-only
// files (the nodes the survey digests): the same data written in another order has the same
// digest, one changed value a different one, and where DEBUG is refused (Valkey's default,
// and the operator's pod template) the operator's own digest is taken.
func TestTheDataDigestComparesDataNotOrder(t *testing.T) {
	for i, version := range []string{"8.0", "9.1"} {
		t.Run(version, func(t *testing.T) {
			bin := valkeyBinaries(t)[version]
			ip := func(n int) string { return fmt.Sprintf("127.78.70.%d", 10*i+n) }
			const aof = "save \"\"\nappendonly yes\nappendfsync always\n"
			p := newTestPool(t)
			forward := restartedWith(t, p, startServerOf(t, bin, ip(1), aof, testPasswords), writeData(false, "v"))
			backward := restartedWith(t, p, startServerOf(t, bin, ip(2), aof, testPasswords), writeData(true, "v"))
			changed := restartedWith(t, p, startServerOf(t, bin, ip(3), aof, testPasswords), writeData(false, "w"))
			debug := restartedWith(t, p, startServerOf(t, bin, ip(4), aof+"enable-debug-command yes\n", testPasswords), writeData(true, "v"))
			debugChanged := restartedWith(t, p, startServerOf(t, bin, ip(5), aof+"enable-debug-command yes\n", testPasswords), writeData(false, "w"))

			if !strings.HasPrefix(forward.Digest, digestScan) {
				t.Fatalf("DEBUG refused: want the operator's own digest, got %q (%+v)", forward.Digest, forward)
			}
			if forward.Digest != backward.Digest {
				t.Errorf("the same data in another order: digests %q and %q", forward.Digest, backward.Digest)
			}
			if forward.Keys != changed.Keys || forward.Digest == changed.Digest {
				t.Errorf("one value changed: %d and %d keys, digests %q and %q", forward.Keys, changed.Keys, forward.Digest, changed.Digest)
			}
			if !strings.HasPrefix(debug.Digest, digestDebug) || !strings.HasPrefix(debugChanged.Digest, digestDebug) {
				t.Fatalf("enable-debug-command yes: want DEBUG DIGEST, got %q and %q", debug.Digest, debugChanged.Digest)
			}
			if debug.Digest == debugChanged.Digest {
				t.Errorf("DEBUG DIGEST of different data alike: %q", debug.Digest)
			}
		})
	}
}

// A node open for writes, or one that follows a history at an offset, is not digested: the
// survey of a steady cluster takes none.
func TestASteadyNodeIsNotDigested(t *testing.T) {
	p := newTestPool(t)
	s := startServerWith(t, "127.78.70.30", "save \"\"\nappendonly yes\nappendfsync always\n")
	app := openPrimary(t, p, s)
	writeData(false, "v")(t, app)
	if v := survey(t, p, s); v.Keys == 0 || v.Digest != "" {
		t.Fatalf("an open primary was digested: %+v", v)
	}
}

// restartedWith opens s as a primary, lets write fill it, restarts it from its append-only file
// and returns its survey once its data is loaded.
func restartedWith(t *testing.T, p *Pool, s *server, write func(*testing.T, vk.Client)) machine.Valkey {
	t.Helper()
	write(t, openPrimary(t, p, s))
	s.restart(t)
	var v machine.Valkey
	eventually(t, "restarted node loaded", func() bool { v = survey(t, p, s); return !v.Loading })
	if v.Offset != 0 || !v.WritesFenced || v.Keys == 0 {
		t.Fatalf("not a node restarted from its append-only file: %+v", v)
	}
	return v
}

// writeData writes one key of every type the digest reads (and one with an expiry time), in
// one order or its reverse; value is the last string key's value.
func writeData(reverse bool, value string) func(*testing.T, vk.Client) {
	return func(t *testing.T, c vk.Client) {
		t.Helper()
		b := c.B()
		cmds := vk.Commands{
			b.Set().Key("s1").Value("one").Build(),
			b.Set().Key("n1").Value("12345").Build(),
			b.Hset().Key("h1").FieldValue().FieldValue("a", "1").FieldValue("b", "2").FieldValue("c", "3").Build(),
			b.Sadd().Key("set1").Member("x", "y", "z").Build(),
			b.Sadd().Key("iset").Member("3", "1", "2").Build(),
			b.Zadd().Key("z1").ScoreMember().ScoreMember(1, "a").ScoreMember(2, "b").Build(),
			b.Rpush().Key("l1").Element("p", "q", "r").Build(),
			b.Xadd().Key("x1").Id("1-1").FieldValue().FieldValue("f", "v").Build(),
			b.Set().Key("e1").Value("ttl").Build(),
			b.Pexpireat().Key("e1").MillisecondsTimestamp(4102444800000).Build(), // 2100
			b.Set().Key("s2").Value(value).Build(),
		}
		if reverse {
			// The same data added in the other order, hash fields and set members too.
			cmds = vk.Commands{
				b.Set().Key("s2").Value(value).Build(),
				b.Set().Key("e1").Value("ttl").Build(),
				b.Pexpireat().Key("e1").MillisecondsTimestamp(4102444800000).Build(),
				b.Xadd().Key("x1").Id("1-1").FieldValue().FieldValue("f", "v").Build(),
				b.Rpush().Key("l1").Element("p", "q", "r").Build(),
				b.Zadd().Key("z1").ScoreMember().ScoreMember(2, "b").ScoreMember(1, "a").Build(),
				b.Sadd().Key("iset").Member("2", "1", "3").Build(),
				b.Sadd().Key("set1").Member("z", "y", "x").Build(),
				b.Hset().Key("h1").FieldValue().FieldValue("c", "3").FieldValue("a", "1").FieldValue("b", "2").Build(),
				b.Set().Key("n1").Value("12345").Build(),
				b.Set().Key("s1").Value("one").Build(),
			}
		}
		for _, r := range c.DoMulti(context.Background(), cmds...) {
			if err := r.Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The operator's own digest is unknown past its bounds, or when the data is not what INFO
// counted: never a digest of part of the data.
func TestTheOperatorsDigestIsUnknownPastItsBounds(t *testing.T) {
	p := newTestPool(t)
	s := startServerWith(t, "127.78.70.31", "save \"\"\nappendonly yes\nappendfsync always\n")
	v := restartedWith(t, p, s, writeData(false, "v"))
	for _, c := range []struct {
		name   string
		keys   int64
		bounds digestBounds
		want   string
	}{
		{"within the bounds", v.Keys, surveyDigestBounds, v.Digest},
		{"more keys than the bound", v.Keys, digestBounds{keys: v.Keys - 1, bytes: 1 << 20}, ""},
		{"more memory than the bound", v.Keys, digestBounds{keys: v.Keys, bytes: 64}, ""},
		{"fewer keys found than counted", v.Keys + 1, surveyDigestBounds, ""},
		{"more keys found than counted", v.Keys - 1, surveyDigestBounds, ""},
	} {
		var got string
		if err := p.run(context.Background(), Addr(s.ip), func(ctx context.Context, cl vk.Client) error {
			got = dataDigest(ctx, cl, c.keys, true, c.bounds)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: digest %q, want %q", c.name, got, c.want)
		}
	}
	if v.Digest == "" {
		t.Fatal("no digest within the bounds")
	}
	// A data set INFO already says is larger than the bound is not scanned.
	ctx := context.Background()
	if got := p.digest(ctx, Addr(s.ip), v.Keys, 1<<20, true, digestBounds{keys: v.Keys, bytes: 1 << 20}); got != v.Digest {
		t.Errorf("a data set within the bounds: digest %q, want %q", got, v.Digest)
	}
	if got := p.digest(ctx, Addr(s.ip), v.Keys, 1<<20+1, true, digestBounds{keys: v.Keys, bytes: 1 << 20}); got != "" {
		t.Errorf("a data set past the bound was scanned: digest %q", got)
	}
}
