package valkey

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
)

// refusedToApplications is every administrative command an application must not run: each
// could lock the operator out, split writes or stop the node (docs/security.md).
var refusedToApplications = [][]string{
	{"ACL", "SETUSER", UserOperator, "off"},
	{"ACL", "DELUSER", UserOperator},
	{"ACL", "LOAD"},
	{"CONFIG", "SET", "dir", "/tmp"},
	{"CONFIG", "GET", "masterauth"},
	{"REPLICAOF", "NO", "ONE"},
	{"SLAVEOF", "NO", "ONE"},
	{"FAILOVER"},
	{"SHUTDOWN", "NOSAVE"},
	{"DEBUG", "SLEEP", "0"},
	{"MODULE", "LIST"},
	{"CLIENT", "KILL", "USER", UserOperator},
	{"CLIENT", "PAUSE", "10000"},
	{"CLIENT", "LIST"},
	{"MONITOR"},
	{"SAVE"},
	{"BGSAVE"},
	{"BGREWRITEAOF"},
	{"PSYNC", "?", "-1"},
	{"SYNC"},
	{"REPLCONF", "listening-port", "1"},
	{"CLUSTER", "RESET"},
	{"LATENCY", "RESET"},
	{"SLOWLOG", "RESET"},
}

// TestApplicationsCannotRunAdministrativeCommands runs every refused command as the
// application user on a real server (opened for writes, as a primary is): each is refused
// with NOPERM, nothing changed, and the application's own commands work.
func TestApplicationsCannotRunAdministrativeCommands(t *testing.T) {
	s := startServer(t, "127.78.0.10")
	p := newTestPool(t)
	ctx := context.Background()
	app := openPrimary(t, p, s)
	if app == nil {
		t.Fatal("the application cannot connect")
	}
	for _, cmd := range refusedToApplications {
		if err := app.Do(ctx, app.B().Arbitrary(cmd[0]).Args(cmd[1:]...).Build()).Error(); !refusedByACL(err) {
			t.Errorf("%s as the application user: %v, want NOPERM", strings.Join(cmd, " "), err)
		}
	}
	for _, cmd := range [][]string{
		{"SET", "k", "v"}, {"GET", "k"}, {"DEL", "k"}, {"INFO", "replication"}, {"PING"},
		{"EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "k"}, {"WAIT", "0", "10"},
		{"CLIENT", "SETNAME", "app"}, {"ACL", "WHOAMI"}, {"DBSIZE"}, {"FLUSHDB"},
	} {
		if err := app.Do(ctx, app.B().Arbitrary(cmd[0]).Args(cmd[1:]...).Build()).Error(); err != nil {
			t.Errorf("%s as the application user: %v, want it allowed", strings.Join(cmd, " "), err)
		}
	}
	// Nor from a script (administrative commands are not allowed in scripts at all).
	if err := app.Do(ctx, app.B().Arbitrary("EVAL").Args("return redis.call('CONFIG', 'SET', 'dir', '/tmp')", "0").Build()).Error(); err == nil {
		t.Error("CONFIG SET from a script as the application user was carried out")
	}
	// The operator keeps control: it still fences the node and sees it.
	v := survey(t, p, s)
	if err := p.Fence(ctx, s.ip, v.RunID); err != nil {
		t.Fatalf("the operator lost control: %v", err)
	}
}

// TestTheOperatorUserHasWhatItSendsAndNoMore: the operator's own user runs every command its
// code sends (the actuator tests exercise them through the Pool) and nothing else: no keys,
// no data commands, no SHUTDOWN or DEBUG.
func TestTheOperatorUserHasWhatItSendsAndNoMore(t *testing.T) {
	s := startServer(t, "127.78.0.11")
	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(s.ip)}, Username: UserOperator, Password: testPasswords.Operator,
		DisableCache: true, DisableRetry: true, Dialer: net.Dialer{Timeout: time.Second}})
	if err != nil {
		t.Fatalf("the operator's user cannot connect: %v", err)
	}
	defer c.Close()
	ctx := context.Background()
	for _, cmd := range [][]string{{"GET", "k"}, {"SET", "k", "v"}, {"FLUSHALL"}, {"KEYS", "*"}, {"SHUTDOWN", "NOSAVE"}, {"DEBUG", "SLEEP", "0"}, {"MODULE", "LIST"}, {"MONITOR"}, {"PUBLISH", "c", "x"}, {"EVAL", "return 1", "0"}} {
		if err := c.Do(ctx, c.B().Arbitrary(cmd[0]).Args(cmd[1:]...).Build()).Error(); !refusedByACL(err) {
			t.Errorf("%s as the operator: %v, want NOPERM", strings.Join(cmd, " "), err)
		}
	}
	for _, cmd := range [][]string{{"INFO", "replication"}, {"ROLE"}, {"DBSIZE"}, {"CONFIG", "GET", "maxmemory"}, {"ACL", "GETUSER", UserClient}, {"ACL", "WHOAMI"},
		// The data digest's reads (digest.go).
		{"SCAN", "0"}, {"TYPE", "k"}, {"PEXPIRETIME", "k"}, {"MEMORY", "USAGE", "k"}, {"DUMP", "k"}, {"HGETALL", "k"}, {"SMEMBERS", "k"}, {"ZRANGE", "k", "0", "-1", "WITHSCORES"}, {"LRANGE", "k", "0", "-1"}} {
		if err := c.Do(ctx, c.B().Arbitrary(cmd[0]).Args(cmd[1:]...).Build()).Error(); err != nil && !vk.IsValkeyNil(err) {
			t.Errorf("%s as the operator: %v, want it allowed", strings.Join(cmd, " "), err)
		}
	}
}

// refusedByACL reports whether err is the ACL's refusal. DEBUG is also refused before the ACL
// is consulted (enable-debug-command no, Valkey's default), which counts too.
func refusedByACL(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "NOPERM") || strings.Contains(err.Error(), "DEBUG command not allowed"))
}

// A user-supplied password holding a space and a newline that looks like a directive: the
// users file holds its hash, so nothing is injected, the server starts, and the application
// authenticates with the password as given.
func TestAPasswordWithANewlineInjectsNothing(t *testing.T) {
	evil := "pass word\nuser intruder on nopass ~* &* +@all"
	if conf := AuthConfig(Passwords{Operator: "o", Client: evil, Replication: "r"}); strings.Contains(conf, "intruder") || strings.Contains(conf, "pass word") {
		t.Fatalf("the password's text reached the users file:\n%s", conf)
	}
	pw := testPasswords
	pw.Client = evil
	s := startServerWithPasswords(t, "127.78.0.12", pw)
	p := newTestPool(t)
	ctx := context.Background()
	v := survey(t, p, s)
	if err := p.Promote(ctx, s.ip, v.RunID); err != nil {
		t.Fatal(err)
	}
	if err := p.OpenWrites(ctx, s.ip, v.RunID); err != nil {
		t.Fatal(err)
	}
	app, err := vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(s.ip)}, Password: evil, DisableCache: true, DisableRetry: true})
	if err != nil {
		t.Fatalf("the application cannot authenticate with its password as given: %v", err)
	}
	defer app.Close()
	if err := app.Do(ctx, app.B().Set().Key("k").Value("v").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	op, err := vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(s.ip)}, Username: UserOperator, Password: pw.Operator, DisableCache: true, DisableRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if err := op.Do(ctx, op.B().AclGetuser().Username("intruder").Build()).Error(); !vk.IsValkeyNil(err) {
		t.Fatalf("ACL GETUSER intruder: %v, want no such user", err)
	}
}

// The readiness probe's user, from the users' file: valkey-cli with its password in
// REDISCLI_AUTH gets PONG, as the pods' probe does, and ROLE, as the preStop hook asks; the
// user can run nothing else (no key, no channel, no other information, no administrative
// command), and a node without a probe password (AuthConfig of an older operator) has no such
// user.
func TestTheProbeUserCanPingAndRoleAndNothingElse(t *testing.T) {
	pw := testPasswords
	pw.Probe = "probe-secret"
	if conf := AuthConfig(pw); strings.Contains(conf, pw.Probe) || !strings.Contains(conf, "user probe reset on "+hashed(pw.Probe)+" ") {
		t.Fatalf("the users' file must define the probe user with its password's hash only:\n%s", conf)
	}
	if conf := AuthConfig(testPasswords); strings.Contains(conf, "probe") {
		t.Fatalf("no probe password, no probe user:\n%s", conf)
	}
	s := startServerWithPasswords(t, "127.78.0.22", pw)
	cmd := exec.Command("valkey-cli", "-h", s.ip, "-p", fmt.Sprint(Port), "--user", UserProbe, "ping")
	cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+pw.Probe)
	if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "PONG" {
		t.Fatalf("valkey-cli --user probe ping = %q, %v; want PONG", out, err)
	}
	c, err := userClient(s.ip, UserProbe, pw.Probe)
	if err != nil {
		t.Fatalf("the probe's user cannot connect: %v", err)
	}
	defer c.Close()
	ctx := context.Background()
	for _, cmd := range [][]string{{"GET", "k"}, {"SET", "k", "v"}, {"KEYS", "*"}, {"INFO"}, {"DBSIZE"}, {"CONFIG", "GET", "masterauth"},
		{"ACL", "WHOAMI"}, {"ACL", "SETUSER", UserProbe, "+@all"}, {"PUBLISH", "c", "x"}, {"EVAL", "return 1", "0"}, {"SHUTDOWN", "NOSAVE"}, {"MONITOR"}, {"REPLICAOF", "NO", "ONE"}} {
		if err := c.Do(ctx, c.B().Arbitrary(cmd[0]).Args(cmd[1:]...).Build()).Error(); !refusedByACL(err) {
			t.Errorf("%s as the probe: %v, want NOPERM", strings.Join(cmd, " "), err)
		}
	}
	if err := c.Do(ctx, c.B().Ping().Build()).Error(); err != nil {
		t.Errorf("PING as the probe: %v", err)
	}
	if err := c.Do(ctx, c.B().Role().Build()).Error(); err != nil {
		t.Errorf("ROLE as the probe: %v", err)
	}
	if c, err := userClient(s.ip, UserProbe, testPasswords.Operator); err == nil {
		c.Close()
		t.Error("the probe's user accepts the operator's password")
	}
}
