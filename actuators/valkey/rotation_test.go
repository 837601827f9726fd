package valkey

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// authAs reports whether user authenticates with password on s (a fresh connection).
func authAs(t *testing.T, s *server, user, password string) bool {
	t.Helper()
	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(s.ip)}, Username: user, Password: password, DisableCache: true, DisableRetry: true})
	if err != nil {
		return false
	}
	defer c.Close()
	return c.Do(context.Background(), c.B().Ping().Build()).Error() == nil
}

// A rotation on real processes: the new passwords added beside the old (both work, the
// comparison sees it), the replica's masterauth switched while its link stays up and a
// resync with the new one works, the old ones retired (refused from then on), and a process
// restarted from a users' file that accepts both still answers the comparison truly.
func TestARotationAddsSwitchesAndRetiresPasswordsOnRealNodes(t *testing.T) {
	ctx := context.Background()
	l := startLinkedPair(t, "127.78.0.13", "127.78.0.14")
	p, prim, repl, pv, rv := l.p, l.prim, l.repl, l.pv, l.rv

	next := Passwords{Operator: "op-new", Client: "client-new", Replication: "repl-new"}
	rot := RotationPasswords{ID: "all@1", Users: []string{UserClient, UserOperator, UserReplication}, Next: next, Previous: testPasswords}
	compare := func(s *server) machine.PasswordState {
		t.Helper()
		st, err := p.ComparePasswords(ctx, s.ip, rot)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := compare(prim); st.Rotation != rot.ID || st.HasNext || !st.HasPrevious || st.MasterAuthNext {
		t.Fatalf("before: want the previous passwords only (a primary's masterauth is the file's too), got %+v", st)
	}
	if st := compare(repl); st.HasNext || !st.HasPrevious || st.MasterAuthNext {
		t.Fatalf("before: the replica authenticates with the previous replication password, got %+v", st)
	}
	for _, s := range []*server{prim, repl} {
		if err := p.AddPasswords(ctx, s.ip, survey(t, p, s).RunID, rot); err != nil {
			t.Fatal(err)
		}
		if st := compare(s); !st.HasNext || !st.HasPrevious {
			t.Fatalf("%s after add-passwords: want both, got %+v", s.ip, st)
		}
	}
	if !authAs(t, prim, UserClient, "client-new") || !authAs(t, prim, UserClient, "client-secret") {
		t.Fatal("after add-passwords both application passwords must work")
	}
	if err := p.AddPasswords(ctx, repl.ip, "not-"+survey(t, p, repl).RunID, rot); err == nil {
		t.Fatal("add-passwords for another process must be refused")
	}

	if err := p.SwitchMasterAuth(ctx, repl.ip, survey(t, p, repl).RunID, rot); err != nil {
		t.Fatal(err)
	}
	if st := compare(repl); !st.MasterAuthNext {
		t.Fatalf("after switch-master-auth: %+v", st)
	}
	// A new sync authenticates with the new replication password.
	if err := p.Fence(ctx, prim.ip, pv.RunID); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(ctx, prim.ip, pv.RunID); err != nil {
		t.Fatal(err)
	}
	if err := p.OpenWrites(ctx, prim.ip, pv.RunID); err != nil {
		t.Fatal(err)
	}
	if err := p.RetirePasswords(ctx, prim.ip, pv.RunID, rot); err != nil {
		t.Fatal(err)
	}
	if st := compare(prim); !st.HasNext || st.HasPrevious {
		t.Fatalf("after retire-passwords: want the new only, got %+v", st)
	}
	// (The replication user may not send HELLO, so it is checked by a resync below.)
	if authAs(t, prim, UserClient, "client-secret") || authAs(t, prim, UserOperator, "op-secret") {
		t.Fatal("a retired password still works")
	}
	if !authAs(t, prim, UserClient, "client-new") || !authAs(t, prim, UserOperator, "op-new") {
		t.Fatal("the new passwords must work after the retirement")
	}
	if err := p.ReplicaOf(ctx, repl.ip, rv.RunID, "127.0.0.1", next.Replication); err != nil {
		t.Fatal(err) // drops the link ...
	}
	if err := p.ReplicaOf(ctx, repl.ip, rv.RunID, prim.ip, next.Replication); err != nil {
		t.Fatal(err) // ... and syncs again, with the new password only
	}
	eventually(t, "replica linked again with the new replication password", func() bool { return survey(t, p, repl).LinkUp })

	// A process that starts from a file accepting both (the Adding phase's file).
	if err := os.WriteFile(filepath.Join(repl.dir, "auth.conf"), []byte(AuthConfigAccepting(testPasswords, next)), 0o600); err != nil {
		t.Fatal(err)
	}
	repl.restart(t)
	if st := compare(repl); !st.HasNext || !st.HasPrevious || st.MasterAuthNext {
		t.Fatalf("restarted from the Adding file: want both passwords and the previous masterauth, got %+v", st)
	}
}
