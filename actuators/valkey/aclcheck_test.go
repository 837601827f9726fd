package valkey

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEveryEscalationShapeNeedsAllowAdmin, on real valkey-server 8.0 and 9.1: rules that grant
// any administrative command or subcommand, however they name it (an alias, one subcommand, a
// first argument, a category, a selector), are reported as administrative, while rules an
// application needs (data commands, dangerous ones included, and INFO) are not. The set is the
// node's own command table, so each shape below must be caught without a list of examples.
func TestEveryEscalationShapeNeedsAllowAdmin(t *testing.T) {
	for version, bin := range valkeyBinaries(t) {
		t.Run(version, func(t *testing.T) {
			s := startClusterServer(t, map[string]string{"8.0": "127.78.16.1", "9.1": "127.78.16.2"}[version], bin)
			p := newTestPool(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			escalations := []struct {
				rules []string
				want  string // one of the commands the check must name
			}{
				{[]string{"+slaveof"}, "SLAVEOF"},
				{[]string{"+replicaof"}, "REPLICAOF"},
				{[]string{"+config|get"}, "CONFIG GET"},
				{[]string{"+acl|deluser"}, "ACL DELUSER"},
				{[]string{"+psync"}, "PSYNC"},
				{[]string{"+sync"}, "SYNC"},
				{[]string{"+client|pause"}, "CLIENT PAUSE"},
				{[]string{"+client|kill"}, "CLIENT KILL"},
				{[]string{"+cluster|setslot"}, "CLUSTER SETSLOT"},
				{[]string{"+cluster|meet"}, "CLUSTER MEET"},
				{[]string{"+cluster|forget"}, "CLUSTER FORGET"},
				{[]string{"+debug|sleep"}, "DEBUG SLEEP"}, // a first-argument rule
				{[]string{"+monitor"}, "MONITOR"},
				{[]string{"+@admin"}, "SHUTDOWN"},
				{[]string{"+@dangerous"}, "FAILOVER"},
				{[]string{"~app:*", "+@all"}, "ACL SETUSER"},
				{[]string{"~app:*", "+@read", "(+config|set", "~other:*)"}, "CONFIG SET"}, // a selector
				{[]string{"resetkeys", "%R~app:*", "+module|load"}, "MODULE LOAD"},
			}
			for _, e := range escalations {
				admin, err := p.CheckACL(ctx, s.ip, ACLUser{Name: "x", Rules: e.rules})
				if err != nil {
					t.Errorf("%v: %v", e.rules, err)
					continue
				}
				if !slices.Contains(admin, e.want) {
					t.Errorf("rules %v: administrative %v, want %s among them", e.rules, admin, e.want)
				}
			}
			grantable := [][]string{
				{"~app:*", "+@read", "+@write", "+ping", "+hello"},
				{"~*", "+keys", "+flushdb", "+flushall", "+sort", "+sort_ro", "+swapdb", "+info", "+restore", "+migrate", "+pfdebug"},
				{"~*", "+@all", "-@admin", "-@dangerous", "+@keyspace"},
				{"~app:*", "+@read", "(+get", "~other:*)"},
			}
			for _, rules := range grantable {
				if admin, err := p.CheckACL(ctx, s.ip, ACLUser{Name: "x", Rules: rules}); err != nil || len(admin) > 0 {
					t.Errorf("rules %v: administrative %v, %v; want none", rules, admin, err)
				}
			}
			var refused *RulesRefused
			if _, err := p.CheckACL(ctx, s.ip, ACLUser{Name: "x", Rules: []string{"+nosuchcommand"}}); !errors.As(err, &refused) {
				t.Errorf("a command Valkey does not know: %v, want RulesRefused", err)
			}
			if _, err := p.CheckACL(ctx, s.ip, ACLUser{Name: "x", Rules: []string{"~app:\"x"}}); !errors.As(err, &refused) || !strings.Contains(err.Error(), "quote") {
				t.Errorf("a quoted rule: %v, want RulesRefused naming the quote", err)
			}
		})
	}
}

// TestTheAdministrativeSetIsTheNodesOwn: the rule on a command table (parsed from what the node
// says): @admin, @dangerous and the admin flag are administrative unless the command is also in
// a data category, INFO is not, subcommands are judged each on its own.
func TestTheAdministrativeSetIsTheNodesOwn(t *testing.T) {
	table := []commandEntry{
		{name: "get", arity: 2, categories: []string{"@read", "@string", "@fast"}},
		{name: "keys", arity: 2, categories: []string{"@keyspace", "@read", "@slow", "@dangerous"}},
		{name: "info", arity: -1, categories: []string{"@slow", "@dangerous"}},
		{name: "newfangled", arity: 1, categories: []string{"@slow", "@dangerous"}},
		{name: "flagged", arity: 1, flags: []string{"admin"}},
		{name: "pfdebug", arity: -3, categories: []string{"@write", "@hyperloglog", "@admin", "@slow", "@dangerous"}},
		{name: "config", arity: -2, categories: []string{"@slow"}, subs: []commandEntry{
			{name: "config|get", arity: -3, categories: []string{"@admin", "@slow", "@dangerous"}},
			{name: "config|help", arity: 2, categories: []string{"@slow"}},
		}},
	}
	var got []string
	for _, e := range administrativeCommands(table) {
		got = append(got, e.name)
	}
	if want := []string{"config|get", "flagged", "newfangled"}; !slices.Equal(got, want) {
		t.Errorf("administrative %v, want %v", got, want)
	}
	if call := (commandEntry{name: "config|set", arity: -4}).call(""); !slices.Equal(call, []string{"CONFIG", "SET", "x", "x"}) {
		t.Errorf("call %v: DRYRUN checks the arity, so the placeholders must fill it", call)
	}
	if call := (commandEntry{name: "debug", arity: -2}).call("sleep"); !slices.Equal(call, []string{"DEBUG", "sleep"}) {
		t.Errorf("call with a first argument %v", call)
	}
}

// TestTheScratchUserCannotBeLoggedInto: whatever the rules, the scratch user ends off with no
// password, and each selector gets every key so DRYRUN judges only the commands.
func TestTheScratchUserCannotBeLoggedInto(t *testing.T) {
	got := scratchRules([]string{"~app:*", "(+get", "~x)", "(+set)", "+@read"})
	want := []string{"reset", "~app:*", "(+get", "~x", "allkeys", "allchannels)", "(+set", "allkeys", "allchannels)", "+@read", "allkeys", "allchannels", "resetpass", "off"}
	if !slices.Equal(got, want) {
		t.Errorf("scratch rules\n got %q\nwant %q", got, want)
	}
	if grants := firstArgGrants([]string{"+debug|sleep", "(+object|freq", "+@read", "-config|get"}); !slices.Equal(grants["debug"], []string{"sleep"}) || !slices.Equal(grants["object"], []string{"freq"}) || len(grants) != 2 {
		t.Errorf("first-argument grants %v", grants)
	}
}

// TestAQuoteInTheUsersFileStopsANodeFromStarting is what refusing quotes rests on, on real
// valkey-server 8.0 and 9.1: a rule with a quote that ACL SETUSER takes live, written into the
// users' file as ApplyACLs' users are, leaves a node that cannot start again; the same user
// without the quote starts.
func TestAQuoteInTheUsersFileStopsANodeFromStarting(t *testing.T) {
	for version, bin := range valkeyBinaries(t) {
		t.Run(version, func(t *testing.T) {
			if bin == "" {
				bin = "valkey-server"
			}
			s := startClusterServer(t, map[string]string{"8.0": "127.78.16.3", "9.1": "127.78.16.4"}[version], bin)
			p := newTestPool(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			quoted := ACLUser{Name: "app", Enabled: true, Rules: []string{`~app:"x`, "+get"}}
			if _, err := p.ApplyACLs(ctx, s.ip, []ACLUser{quoted}); err != nil {
				t.Fatalf("live, Valkey takes the quoted rule: %v", err)
			}
			start := func(u ACLUser) error {
				dir := t.TempDir()
				conf := filepath.Join(dir, "valkey.conf")
				text := fmt.Sprintf("bind 127.78.16.5\nport %d\ndir %s\nsave \"\"\n%s", Port, dir, AuthConfig(testPasswords, u))
				if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(bin, conf, "--daemonize", "no")
				cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case err := <-done:
					if err == nil {
						return errors.New("exited")
					}
					return err
				case <-time.After(2 * time.Second):
					_ = cmd.Process.Kill()
					if err := <-done; err == nil {
						return errors.New("exited by itself when killed")
					}
					return nil // still running until killed: it started
				}
			}
			if err := start(quoted); err == nil {
				t.Error("a node started from a users' file with a quoted rule; refusing quotes rests on it not starting")
			}
			if err := start(ACLUser{Name: "app", Enabled: true, Rules: []string{"~app:x", "+get"}}); err != nil {
				t.Errorf("the same user without the quote: %v", err)
			}
		})
	}
}
