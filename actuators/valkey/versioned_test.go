package valkey

import (
	"context"
	"maps"
	"strings"
	"syscall"
	"testing"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestVersionedDirectivesFollowTheReportedVersion: what a node gets by the version it reports,
// its topology and TLS, and that a directive the user sets is left to the user's value.
func TestVersionedDirectivesFollowTheReportedVersion(t *testing.T) {
	none := func(string) bool { return false }
	userSets := func(keys ...string) func(string) bool {
		return func(k string) bool {
			for _, u := range keys {
				if strings.EqualFold(u, k) {
					return true
				}
			}
			return false
		}
	}
	failover := map[string]string{ShutdownOnSigterm: "failover"}
	both := map[string]string{ShutdownOnSigterm: "failover", TLSAutoReloadInterval: "60"}
	reload := map[string]string{TLSAutoReloadInterval: "60"}
	for _, c := range []struct {
		name string
		f    NodeFacts
		user func(string) bool
		want map[string]string
	}{
		{"8.0 replication with TLS: neither", NodeFacts{Version: "8.0.1", TLS: true}, none, map[string]string{}},
		{"8.1 replication with TLS: neither", NodeFacts{Version: "8.1.4", TLS: true}, none, map[string]string{}},
		{"9.0 replication: failover on SIGTERM", NodeFacts{Version: "9.0.0"}, none, failover},
		{"9.0 replication with TLS: no reload before 9.1", NodeFacts{Version: "9.0.3", TLS: true}, none, failover},
		{"9.1 replication with TLS: both", NodeFacts{Version: "9.1.2", TLS: true}, none, both},
		{"9.1 replication without TLS: failover only", NodeFacts{Version: "9.1.2"}, none, failover},
		{"10.0 replication with TLS: both", NodeFacts{Version: "10.0.0", TLS: true}, none, both},
		{"9.1 cluster with TLS: reload, never Valkey's own failover", NodeFacts{Version: "9.1.2", Cluster: true, TLS: true}, none, reload},
		{"9.1 cluster without TLS: nothing", NodeFacts{Version: "9.1.2", Cluster: true}, none, map[string]string{}},
		{"unknown version: nothing", NodeFacts{Version: "", TLS: true}, none, map[string]string{}},
		{"unreadable version: nothing", NodeFacts{Version: "unstable", TLS: true}, none, map[string]string{}},
		{"the user's shutdown-on-sigterm wins", NodeFacts{Version: "9.1.2", TLS: true}, userSets("Shutdown-On-SIGTERM"), reload},
		{"the user's reload interval wins", NodeFacts{Version: "9.1.2", TLS: true}, userSets("tls-auto-reload-interval"), failover},
		{"nil user set", NodeFacts{Version: "9.1.2", TLS: true}, nil, both},
		{"a refused Secret holds the reload", NodeFacts{Version: "9.1.2", TLS: true, TLSRefused: true}, none, map[string]string{ShutdownOnSigterm: "failover", TLSAutoReloadInterval: "0"}},
		{"a refused Secret on 9.0: nothing to hold", NodeFacts{Version: "9.0.0", TLS: true, TLSRefused: true}, none, failover},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := VersionedDirectives(c.f, c.user); !maps.Equal(got, c.want) {
				t.Fatalf("VersionedDirectives(%+v) = %v, want %v", c.f, got, c.want)
			}
		})
	}
}

func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		v            string
		major, minor int
		want         bool
	}{
		{"9.0.0", 9, 0, true}, {"8.1.9", 9, 0, false}, {"9.1.2", 9, 1, true}, {"9.0.9", 9, 1, false},
		{"10.0.0", 9, 1, true}, {"9.10.0", 9, 1, true}, {"9", 9, 0, false}, {"", 0, 0, false}, {"x.1.0", 0, 0, false},
	} {
		if got := VersionAtLeast(c.v, c.major, c.minor); got != c.want {
			t.Errorf("VersionAtLeast(%q, %d, %d) = %v, want %v", c.v, c.major, c.minor, got, c.want)
		}
	}
}

// TestVersionedDirectivesAreSetLiveOnlyWhereTheServerKnowsThem: on a real 9.1 server every
// directive VersionedDirectives gives it is set live (ApplyLive, as the operator sets them)
// and reads back; Debian's 8.0 refuses the same set, which is why the gate is the reported
// version and why they are never written to the shared valkey.conf.
func TestVersionedDirectivesAreSetLiveOnlyWhereTheServerKnowsThem(t *testing.T) {
	bins := valkeyBinaries(t)
	ctx := context.Background()
	p := newTestPool(t)
	v91 := startServerOf(t, bins["9.1"], "127.78.33.1", "save \"\"\nappendonly no\n", testPasswords)
	sv := survey(t, p, v91)
	set := VersionedDirectives(NodeFacts{Version: sv.Version, TLS: true}, nil)
	if len(set) != 2 {
		t.Fatalf("a 9.1 node (reports %q) serving TLS gets %v, want both directives", sv.Version, set)
	}
	if err := p.ApplyLive(ctx, v91.ip, sv.RunID, set); err != nil {
		t.Fatalf("9.1 refuses %v: %v", set, err)
	}
	for k, want := range set {
		if got := directiveOf(t, v91, k); got != want {
			t.Errorf("9.1: CONFIG GET %s = %q, want %q", k, got, want)
		}
	}

	v80 := startServerOf(t, "", "127.78.33.2", "save \"\"\nappendonly no\n", testPasswords)
	old := survey(t, p, v80)
	if got := VersionedDirectives(NodeFacts{Version: old.Version, TLS: true}, nil); len(got) != 0 {
		t.Fatalf("an 8.0 node (reports %q) gets %v, want nothing", old.Version, got)
	}
	for k, v := range set {
		if err := p.ApplyLive(ctx, v80.ip, old.RunID, map[string]string{k: v}); err == nil {
			t.Errorf("8.0 accepted %s %s: the version gate would not be needed", k, v)
		}
	}
}

// TestShutdownFailoverPromotesNothingInAReplicationGroup pins what VersionedDirectives relies
// on to set shutdown-on-sigterm failover on a replication group: on Valkey 9.1, a primary
// with the directive that gets SIGTERM (the preStop hold ran out) still waits for its replica
// to take every write, exits, and promotes nobody; the machine alone decides the failover.
func TestShutdownFailoverPromotesNothingInAReplicationGroup(t *testing.T) {
	bins := valkeyBinaries(t)
	ctx := context.Background()
	p := newTestPool(t)
	persistence := "save \"\"\nappendonly no\n"
	prim := startServerOf(t, bins["9.1"], "127.78.33.3", persistence, testPasswords)
	repl := startServerOf(t, bins["9.1"], "127.78.33.4", persistence, testPasswords)
	pv, rv := survey(t, p, prim), survey(t, p, repl)
	if err := p.Promote(ctx, prim.ip, pv.RunID); err != nil {
		t.Fatal(err)
	}
	if err := p.OpenWrites(ctx, prim.ip, pv.RunID); err != nil {
		t.Fatal(err)
	}
	if err := p.ReplicaOf(ctx, repl.ip, rv.RunID, prim.ip, testPasswords.Replication); err != nil {
		t.Fatal(err)
	}
	eventually(t, "replica online at the primary", func() bool { return onlineReplicas(t, prim) == 1 })
	if err := p.ApplyLive(ctx, prim.ip, pv.RunID, VersionedDirectives(NodeFacts{Version: pv.Version}, nil)); err != nil {
		t.Fatal(err)
	}
	if got := directiveOf(t, prim, ShutdownOnSigterm); got != "failover" {
		t.Fatalf("shutdown-on-sigterm = %q, want failover", got)
	}
	c := appClient(t, prim)
	const keys = 2000
	for i := 0; i < keys; i++ {
		if err := c.Do(ctx, c.B().Set().Key("k"+itoa(uint64(i))).Value("v").Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if err := prim.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = prim.cmd.Wait()
	after := survey(t, p, repl)
	if after.Role == machine.RolePrimary {
		t.Fatalf("the replica was promoted on the primary's SIGTERM: %+v", after)
	}
	if after.Keys != keys {
		t.Fatalf("the replica holds %d keys after the primary's shutdown, want %d (the primary waits for it)", after.Keys, keys)
	}
}

// directiveOf reads one directive of s as the operator's user.
func directiveOf(t *testing.T, s *server, directive string) string {
	t.Helper()
	p := newTestPool(t)
	var got string
	err := p.runFor(context.Background(), Addr(s.ip), p.opts.Timeout, func(ctx context.Context, c vk.Client) error {
		m, err := c.Do(ctx, c.B().ConfigGet().Parameter(directive).Build()).AsStrMap()
		got = m[directive]
		return err
	})
	if err != nil {
		t.Fatalf("CONFIG GET %s on %s: %v", directive, s.ip, err)
	}
	return got
}
