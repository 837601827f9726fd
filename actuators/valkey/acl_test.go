package valkey

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
)

// userClient connects to ip as user with password (no retry: a refused AUTH is the answer).
func userClient(ip, user, password string) (vk.Client, error) {
	return vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(ip)}, Username: user, Password: password, DisableCache: true, ForceSingleClient: true, DisableRetry: true})
}

// TestValkeyACLUsersAreCheckedAppliedAndDeleted, on a real valkey-server with the operator's
// users: CheckACL accepts good rules (and leaves no scratch user behind), refuses rules Valkey
// refuses, and names the administrative commands rules grant; ApplyACLs creates a user limited
// to its key pattern (NOPERM elsewhere), replaces its rules from nothing on an update, takes two
// passwords at once, switches it off, and deletes it when no resource asks for it; the users'
// file with the user lets a restarted process authenticate it before any ApplyACLs.
func TestValkeyACLUsersAreCheckedAppliedAndDeleted(t *testing.T) {
	s := startServer(t, "127.78.5.1")
	p := newTestPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := p.Survey(ctx, s.ip)
	if err != nil {
		t.Fatal(err)
	}
	if v.OtherUsers {
		t.Fatal("the survey reports users besides the operator's own on a node that has none")
	}
	if err := p.Promote(ctx, s.ip, v.RunID); err != nil { // it starts as a replica of nothing
		t.Fatal(err)
	}
	// otherUsers is what the survey says: a ValkeyACL user writes whatever the application
	// user's fence says, so the machine must know one is there.
	otherUsers := func() bool {
		t.Helper()
		v, err := p.Survey(ctx, s.ip)
		if err != nil {
			t.Fatal(err)
		}
		return v.OtherUsers
	}
	app := ACLUser{Name: "app", Enabled: true, Hashes: []string{PasswordRule("app-secret")}, Rules: []string{"~app:*", "+@read", "+@write", "+ping", "+hello"}}

	admin, err := p.CheckACL(ctx, s.ip, app)
	if err != nil || len(admin) != 0 {
		t.Fatalf("CheckACL of ordinary rules: admin %v, %v", admin, err)
	}
	if _, err := p.CheckACL(ctx, s.ip, ACLUser{Name: "x", Rules: []string{"+nosuchcommand"}}); err == nil || !strings.Contains(err.Error(), "refused by Valkey") {
		t.Errorf("CheckACL of a command Valkey does not know: %v, want a refusal", err)
	}
	admin, err = p.CheckACL(ctx, s.ip, ACLUser{Name: "x", Rules: []string{"~*", "+@all"}})
	if err != nil || !slices.Contains(admin, "CONFIG SET") || !slices.Contains(admin, "ACL SETUSER") {
		t.Errorf("CheckACL of +@all: admin %v, %v; want CONFIG SET and ACL SETUSER among them", admin, err)
	}
	users := func() []string {
		c, err := userClient(s.ip, UserOperator, testPasswords.Operator)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		list, err := c.Do(ctx, c.B().AclUsers().Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	if got := users(); len(got) != 3 {
		t.Fatalf("users after the checks: %v; want only the operator's three (no scratch user left)", got)
	}

	// expect checks what the user can do: authenticate, then write app:1 and other:1.
	expect := func(what, password string, auth, appWrite, otherWrite bool) {
		t.Helper()
		c, err := userClient(s.ip, "app", password)
		if (err == nil) != auth {
			t.Fatalf("%s: AUTH as app: %v, want it accepted=%v", what, err, auth)
		}
		if err != nil {
			return
		}
		defer c.Close()
		if err := c.Do(ctx, c.B().Set().Key("app:1").Value("v").Build()).Error(); (err == nil) != appWrite {
			t.Errorf("%s: SET app:1: %v, want allowed=%v", what, err, appWrite)
		}
		err = c.Do(ctx, c.B().Set().Key("other:1").Value("v").Build()).Error()
		if (err == nil) != otherWrite || (err != nil && !strings.Contains(err.Error(), "NOPERM")) {
			t.Errorf("%s: SET other:1: %v, want allowed=%v (NOPERM otherwise)", what, err, otherWrite)
		}
	}
	if _, err := p.ApplyACLs(ctx, s.ip, []ACLUser{app}); err != nil {
		t.Fatal(err)
	}
	expect("applied", "app-secret", true, true, false)
	if !otherUsers() {
		t.Error("the survey does not report the ValkeyACL user")
	}

	readOnly := app
	readOnly.Rules = []string{"~app:*", "+@read", "+ping", "+hello"}
	readOnly.Hashes = []string{PasswordRule("app-secret"), PasswordRule("app-secret-2")}
	if _, err := p.ApplyACLs(ctx, s.ip, []ACLUser{readOnly}); err != nil {
		t.Fatal(err)
	}
	expect("rules narrowed, old password", "app-secret", true, false, false)
	expect("rules narrowed, new password", "app-secret-2", true, false, false)

	off := readOnly
	off.Enabled = false
	if _, err := p.ApplyACLs(ctx, s.ip, []ACLUser{off}); err != nil {
		t.Fatal(err)
	}
	expect("switched off", "app-secret", false, false, false)

	deleted, err := p.ApplyACLs(ctx, s.ip, nil)
	if err != nil || !slices.Equal(deleted, []string{"app"}) {
		t.Fatalf("ApplyACLs with no users: deleted %v, %v; want app", deleted, err)
	}
	if got := users(); slices.Contains(got, "app") || len(got) != 3 {
		t.Fatalf("users after the deletion: %v", got)
	}
	if otherUsers() {
		t.Error("the survey reports a ValkeyACL user after its deletion")
	}

	// A process started from the users' file has the user before the operator looks at it.
	if err := os.WriteFile(filepath.Join(s.dir, "auth.conf"), []byte(AuthConfig(testPasswords, app)), 0o600); err != nil {
		t.Fatal(err)
	}
	s.restart(t)
	if v, err = p.Survey(ctx, s.ip); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(ctx, s.ip, v.RunID); err != nil {
		t.Fatal(err)
	}
	expect("restarted from the users' file", "app-secret", true, true, false)
}
