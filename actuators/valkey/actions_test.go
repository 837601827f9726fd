package valkey

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// These tests run real valkey-server processes on loopback addresses 127.78.0.x, started
// with the same users and fences the operator renders.

var testPasswords = Passwords{Operator: "op-secret", Client: "client-secret", Replication: "repl-secret"}

type server struct {
	ip  string
	cmd *exec.Cmd
	dir string
	// bin is the valkey-server to run ("": the one on PATH, Debian's 8.0).
	bin string
}

func startServer(t *testing.T, ip string) *server {
	t.Helper()
	return startServerWith(t, ip, "save \"\"\nappendonly no\n")
}

// startServerWith starts a server with persistence directives of its own.
func startServerWith(t *testing.T, ip, persistence string) *server {
	t.Helper()
	return startServerWithConfig(t, ip, persistence, testPasswords)
}

// startServerWithPasswords starts a server whose users have the passwords pw.
func startServerWithPasswords(t *testing.T, ip string, pw Passwords) *server {
	t.Helper()
	return startServerWithConfig(t, ip, "save \"\"\nappendonly no\n", pw)
}

func startServerWithConfig(t *testing.T, ip, persistence string, pw Passwords) *server {
	t.Helper()
	return startServerOf(t, "", ip, persistence, pw)
}

// startServerOf is startServerWithConfig running the valkey-server at bin ("": Debian's 8.0
// on PATH).
func startServerOf(t *testing.T, bin, ip, persistence string, pw Passwords) *server {
	t.Helper()
	if _, err := exec.LookPath("valkey-server"); err != nil {
		t.Skip("valkey-server is not installed (make valkey)")
	}
	dir := t.TempDir()
	auth := filepath.Join(dir, "auth.conf")
	if err := os.WriteFile(auth, []byte(AuthConfig(pw)), 0o600); err != nil {
		t.Fatal(err)
	}
	// replica-announce-ip: on loopback a replica connects from 127.0.0.1; FAILOVER TO
	// finds the target by the address the replica announces. The operator renders the same.
	conf := fmt.Sprintf("bind %[1]s\nport %[2]d\ndir %[3]s\n%[6]srepl-diskless-sync-delay 0\nreplica-announce-ip %[1]s\n%[5]sinclude %[4]s\n", ip, Port, dir, auth, StartAsReplicaOfNothing, persistence)
	if err := os.WriteFile(filepath.Join(dir, "valkey.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &server{ip: ip, dir: dir, bin: bin}
	s.start(t)
	return s
}

func (s *server) start(t testing.TB) {
	t.Helper()
	bin := s.bin
	if bin == "" {
		bin = "valkey-server"
	}
	s.cmd = exec.Command(bin, filepath.Join(s.dir, "valkey.conf"))
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd := s.cmd
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", Addr(s.ip), 100*time.Millisecond); err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("valkey-server on %s did not start", s.ip)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *server) restart(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.start(t)
}

func newTestPool(t testing.TB) *Pool {
	p := NewPool(Options{Password: testPasswords.Operator, Timeout: time.Second})
	t.Cleanup(p.Close)
	return p
}

func survey(t testing.TB, p *Pool, s *server) machine.Valkey {
	t.Helper()
	v, err := p.Survey(context.Background(), s.ip)
	if err != nil {
		t.Fatalf("survey %s: %v", s.ip, err)
	}
	return v
}

// openPrimary makes the node at s a primary open for writes, as the operator leaves a
// primary, and returns an application's client of it.
func openPrimary(t *testing.T, p *Pool, s *server) vk.Client {
	t.Helper()
	ctx := context.Background()
	if err := p.Promote(ctx, s.ip, survey(t, p, s).RunID); err != nil {
		t.Fatal(err)
	}
	if err := p.OpenWrites(ctx, s.ip, survey(t, p, s).RunID); err != nil {
		t.Fatal(err)
	}
	return appClient(t, s)
}

// appClient connects as an application would: AUTH with the client password.
func appClient(t *testing.T, s *server) vk.Client {
	t.Helper()
	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(s.ip)}, Password: testPasswords.Client, DisableCache: true, DisableRetry: true})
	if err != nil {
		return nil
	}
	t.Cleanup(c.Close)
	return c
}

// eventually waits up to 10 s for f. detail, when given, is what f last found (f writes it),
// added to the failure message.
func eventually(t testing.TB, what string, f func() bool, detail ...*string) {
	t.Helper()
	eventuallyWithin(t, 10*time.Second, 50*time.Millisecond, what, f, detail...)
}

// eventuallyWithin polls f every poll until it holds or timeout passes.
func eventuallyWithin(t testing.TB, timeout, poll time.Duration, what string, f func() bool, detail ...*string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) {
			for _, d := range detail {
				what += "; last seen: " + *d
			}
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(poll)
	}
}

func TestFreshNodeStartsFencedAndCannotBeASyncSource(t *testing.T) {
	p := newTestPool(t)
	prim, repl := startServer(t, "127.78.0.1"), startServer(t, "127.78.0.2")
	v := survey(t, p, prim)
	if v.Role != machine.RoleReplica || v.PrimaryHost != "" || v.LinkUp || !v.WritesFenced || !v.SyncFenced || v.RunID == "" {
		t.Fatalf("a fresh node should be a fenced replica of nothing with a run id, got %+v", v)
	}
	if appClient(t, prim) != nil {
		t.Fatalf("an application could log in to a fenced node")
	}
	r := survey(t, p, repl)
	if err := p.ReplicaOf(context.Background(), repl.ip, r.RunID, prim.ip, testPasswords.Replication); err != nil {
		t.Fatal(err)
	}
	// The fresh node follows nothing and its replication user is off: no sync from it.
	time.Sleep(1500 * time.Millisecond)
	if r := survey(t, p, repl); r.Role != machine.RoleReplica || r.LinkUp {
		t.Fatalf("a replica synced from a fresh, fenced node: %+v", r)
	}
	// Promoted but with writes still fenced, it serves replicas...
	if err := p.Promote(context.Background(), prim.ip, v.RunID); err != nil {
		t.Fatal(err)
	}
	if appClient(t, prim) != nil {
		t.Fatalf("an application could log in to a promoted node before OpenWrites")
	}
	// ... and opened, it takes writes.
	if err := p.OpenWrites(context.Background(), prim.ip, v.RunID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "replica link up once the primary is open", func() bool { return survey(t, p, repl).LinkUp })
	c := appClient(t, prim)
	if c == nil {
		t.Fatal("the application cannot log in to an open primary")
	}
	if err := c.Do(context.Background(), c.B().Set().Key("k").Value("v").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	rc := appClient(t, repl)
	eventually(t, "key replicated and readable on the replica", func() bool {
		got, err := rc.Do(context.Background(), rc.B().Get().Key("k").Build()).ToString()
		return err == nil && got == "v"
	})
	if err := rc.Do(context.Background(), rc.B().Set().Key("x").Value("y").Build()).Error(); err == nil {
		t.Fatal("a replica accepted a write")
	}
}

func TestActionsAreRefusedForAnotherProcess(t *testing.T) {
	p := newTestPool(t)
	s := startServer(t, "127.78.0.3")
	old := survey(t, p, s).RunID
	s.restart(t)
	if v := survey(t, p, s); v.Role != machine.RoleReplica || v.PrimaryHost != "" || !v.WritesFenced {
		t.Fatalf("a restarted node should come back a fenced replica of nothing: %+v", v)
	}
	err := p.OpenWrites(context.Background(), s.ip, old)
	if !errors.Is(err, ErrOtherProcess) {
		t.Fatalf("OpenWrites for the previous process: got %v, want ErrOtherProcess", err)
	}
	if v := survey(t, p, s); !v.WritesFenced {
		t.Fatalf("the refused action opened the new process: %+v", v)
	}
}

func TestFenceDetachPromoteAndHandOver(t *testing.T) {
	ctx := context.Background()
	p := newTestPool(t)
	a, b, c := startServer(t, "127.78.0.4"), startServer(t, "127.78.0.5"), startServer(t, "127.78.0.6")
	va, vb, vc := survey(t, p, a), survey(t, p, b), survey(t, p, c)
	if err := p.Promote(ctx, a.ip, va.RunID); err != nil {
		t.Fatal(err)
	}
	if err := p.OpenWrites(ctx, a.ip, va.RunID); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		s *server
		v machine.Valkey
	}{{b, vb}, {c, vc}} {
		if err := p.ReplicaOf(ctx, r.s.ip, r.v.RunID, a.ip, testPasswords.Replication); err != nil {
			t.Fatal(err)
		}
	}
	// Linked as the replicas see it, and online as the primary sees it (it counts a replica
	// only after the first acknowledgement following the sync; FAILOVER TO needs that).
	eventually(t, "both replicas linked and online", func() bool {
		return survey(t, p, b).LinkUp && survey(t, p, c).LinkUp && onlineReplicas(t, a) == 2
	})

	// Planned hand-over a -> b: no write lost, a follows b.
	app := appClient(t, a)
	if err := app.Do(ctx, app.B().Set().Key("before").Value("1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := p.HandOver(ctx, a.ip, va.RunID, b.ip, vb.RunID, 5000); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b primary, a its replica", func() bool {
		nb, na := survey(t, p, b), survey(t, p, a)
		return nb.Role == machine.RolePrimary && na.Role == machine.RoleReplica && na.PrimaryHost == b.ip && na.LinkUp
	})
	bc := appClient(t, b)
	if got, err := bc.Do(ctx, bc.B().Get().Key("before").Build()).ToString(); err != nil || got != "1" {
		t.Fatalf("after the hand-over GET before = %q, %v", got, err)
	}

	// Detach c (which still follows a): link down, role and history kept.
	hist := survey(t, p, c).ReplID
	if err := p.Detach(ctx, c.ip, vc.RunID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	dc := survey(t, p, c)
	if dc.Role != machine.RoleReplica || dc.LinkUp || dc.PrimaryHost != "" || dc.ReplID != hist {
		t.Fatalf("after Detach: %+v (history was %s)", dc, hist)
	}

	// Promote c, then fence it as a stray: no client may write, no replica may sync.
	if err := p.Promote(ctx, c.ip, vc.RunID); err != nil {
		t.Fatal(err)
	}
	pc := survey(t, p, c)
	if pc.Role != machine.RolePrimary || pc.SyncFenced || !pc.WritesFenced || pc.ReplID2 != hist {
		t.Fatalf("after Promote: %+v (want a primary continuing history %s, serving replicas, writes fenced)", pc, hist)
	}
	if appClient(t, c) != nil {
		t.Fatal("an application logged in to a promoted replica before OpenWrites")
	}
	if err := p.Fence(ctx, c.ip, vc.RunID); err != nil {
		t.Fatal(err)
	}
	if fc := survey(t, p, c); !fc.WritesFenced || !fc.SyncFenced {
		t.Fatalf("after Fence: %+v", fc)
	}
	if appClient(t, c) != nil {
		t.Fatal("an application logged in to a fenced node")
	}
	if !strings.Contains(AuthConfig(testPasswords), "user default off") {
		t.Fatal("the client user must start off")
	}
}

// onlineReplicas counts the replicas the primary at s lists as online.
func onlineReplicas(t *testing.T, s *server) int {
	t.Helper()
	out, err := exec.Command("valkey-cli", "-h", s.ip, "-p", fmt.Sprint(Port), "--user", UserOperator, "--pass", testPasswords.Operator, "--no-auth-warning", "info", "replication").Output()
	if err != nil {
		return 0
	}
	return strings.Count(string(out), "state=online")
}

// linkedPair is a primary open for writes at primIP and a replica at replIP linked to it, with
// the survey each had before (run ids).
type linkedPair struct {
	p          *Pool
	prim, repl *server
	pv, rv     machine.Valkey
}

func startLinkedPair(t *testing.T, primIP, replIP string) linkedPair {
	t.Helper()
	ctx := context.Background()
	l := linkedPair{p: newTestPool(t), prim: startServer(t, primIP), repl: startServer(t, replIP)}
	l.pv, l.rv = survey(t, l.p, l.prim), survey(t, l.p, l.repl)
	if err := l.p.Promote(ctx, l.prim.ip, l.pv.RunID); err != nil {
		t.Fatal(err)
	}
	if err := l.p.OpenWrites(ctx, l.prim.ip, l.pv.RunID); err != nil {
		t.Fatal(err)
	}
	if err := l.p.ReplicaOf(ctx, l.repl.ip, l.rv.RunID, l.prim.ip, testPasswords.Replication); err != nil {
		t.Fatal(err)
	}
	eventually(t, "replica linked", func() bool { return survey(t, l.p, l.repl).LinkUp })
	return l
}

// TestARoleHandedOverAndBackNamesTheIntermediateHistory: the facts the machine's
// history-taken-back rests on, from real Valkey. A primary that hands its role over (FAILOVER
// TO) and is handed it back is the same process, primary again, with every write, under a new
// history whose previous one is the intermediate primary's, not its own first one; and the
// intermediate node, its replica again, names only the new history.
func TestARoleHandedOverAndBackNamesTheIntermediateHistory(t *testing.T) {
	ctx := context.Background()
	l := startLinkedPair(t, "127.78.0.23", "127.78.0.24")
	a, b := l.prim, l.repl
	first := survey(t, l.p, a)
	eventually(t, "b online at a", func() bool { return onlineReplicas(t, a) == 1 })
	ca := appClient(t, a)
	if err := ca.Do(ctx, ca.B().Set().Key("on-a").Value("1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := l.p.HandOver(ctx, a.ip, first.RunID, b.ip, l.rv.RunID, 5000); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b primary, a its online replica", func() bool {
		return survey(t, l.p, b).Role == machine.RolePrimary && survey(t, l.p, a).LinkUp && onlineReplicas(t, b) == 1
	})
	middle := survey(t, l.p, b)
	if err := l.p.OpenWrites(ctx, b.ip, l.rv.RunID); err != nil {
		t.Fatal(err)
	}
	cb := appClient(t, b)
	if err := cb.Do(ctx, cb.B().Set().Key("on-b").Value("1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := l.p.HandOver(ctx, b.ip, l.rv.RunID, a.ip, first.RunID, 5000); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a primary again, b its replica", func() bool {
		return survey(t, l.p, a).Role == machine.RolePrimary && survey(t, l.p, b).LinkUp
	})
	back, mid := survey(t, l.p, a), survey(t, l.p, b)
	if back.RunID != first.RunID || back.ReplID == first.ReplID || back.ReplID2 != middle.ReplID || back.ReplID2 == first.ReplID || back.SecondOffset <= 0 {
		t.Fatalf("a back: %+v; want the same process, a new history promoted from b's %s (a's first was %s)", back, middle.ReplID, first.ReplID)
	}
	if mid.ReplID != back.ReplID || mid.ReplID2 == first.ReplID {
		t.Fatalf("b, a replica again: %+v; want it to name a's new history %s and not a's first %s", mid, back.ReplID, first.ReplID)
	}
	if err := l.p.OpenWrites(ctx, a.ip, first.RunID); err != nil {
		t.Fatal(err)
	}
	ca = appClient(t, a)
	for _, k := range []string{"on-a", "on-b"} {
		if got, err := ca.Do(ctx, ca.B().Get().Key(k).Build()).ToString(); err != nil || got != "1" {
			t.Fatalf("a back: GET %s = %q, %v; want every write kept", k, got, err)
		}
	}
}

// A bulk action's deadline grows with its commands: taking all 16384 slots over gets nine
// timeouts, not one, so a busy node that answers it in a few seconds does not fail it on every
// retry; a small action keeps the single timeout that bounds an unreachable node.
func TestABulkActionsDeadlineGrowsWithItsWork(t *testing.T) {
	p := newTestPool(t)
	if got := p.bulkTimeout(machine.NumSlots); got != 9*time.Second {
		t.Errorf("16384 slots get %s, want 9s", got)
	}
	if got := p.bulkTimeout(10); got != time.Second {
		t.Errorf("10 slots get %s, want the pool's timeout, 1s", got)
	}
}
