package sentinelreal

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/e2e/localproc"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/conformance"
)

// The real side of the sentinels' actuator contract (conformance.SentinelTable; machine/sim's
// TestSimulatedActuatorsConformToTheSentinelTable plays it on the model): three valkey-server
// processes (a primary and two replicas) and three valkey-sentinel processes that monitor
// nothing, each on a loopback address of its own (127.237.<100+version>.x) and on the ports
// the product's pods use (6379, 26379), because the real actuator dials those. The actions go
// through the actuator the operator's table calls (actuators/valkey), the sentinels are
// observed with the operator's own survey (SurveySentinel), the data nodes with INFO.

// realSentinelWorld is the table's world on real processes.
type realSentinelWorld struct {
	t         *testing.T
	pool      *valkey.Pool
	servers   []*proc
	sentinels []*proc
}

func newRealSentinelWorld(t *testing.T, binDir string, octet int) *realSentinelWorld {
	w := &realSentinelWorld{t: t, pool: valkey.NewPool(valkey.Options{Timeout: 2 * time.Second})}
	dir := t.TempDir()
	t.Cleanup(func() {
		w.pool.Close()
		for _, p := range append(append([]*proc(nil), w.sentinels...), w.servers...) {
			p.Kill()
		}
	})
	// The operator authenticates as its own user, and the sentinels reach the data nodes as
	// theirs, as in the product: a hand-over closes the application user (default) on the
	// old primary, and the sentinels must still reach it to make it a replica. These
	// processes let every user in without a password (the password is not what the table is
	// about).
	users := []string{"user default on nopass ~* &* +@all", "user " + valkey.UserOperator + " on nopass ~* &* +@all",
		"user " + valkey.UserSentinel + " on nopass ~* &* +@all"}
	for i := 0; i < 3; i++ {
		ip := fmt.Sprintf("127.237.%d.%d", octet, i+1)
		p := &proc{Proc: newFixedPortProc(t, fmt.Sprintf("server-%d", i), ip, filepath.Join(dir, fmt.Sprintf("server-%d", i)), valkey.Port), bin: filepath.Join(binDir, "valkey-server")}
		conf := append([]string{"bind " + ip, "port " + strconv.Itoa(valkey.Port), "dir " + p.Dir, "logfile " + p.log(),
			`save ""`, "appendonly no", "protected-mode no", "replica-announce-ip " + ip, "bind-source-addr " + ip,
			"repl-diskless-sync-delay 0"}, users...)
		if i > 0 {
			conf = append(conf, fmt.Sprintf("replicaof %s %d", w.servers[0].IP, valkey.Port))
		}
		p.args = []string{writeConf(t, p.Dir, "valkey.conf", conf)}
		p.start(t)
		w.servers = append(w.servers, p)
	}
	for i := 0; i < 3; i++ {
		ip := fmt.Sprintf("127.237.%d.%d", octet, i+11)
		p := &proc{Proc: newFixedPortProc(t, fmt.Sprintf("sentinel-%d", i), ip, filepath.Join(dir, fmt.Sprintf("sentinel-%d", i)), valkey.SentinelPort), bin: filepath.Join(binDir, "valkey-sentinel")}
		conf := append([]string{"bind " + ip, "port " + strconv.Itoa(valkey.SentinelPort), "bind-source-addr " + ip,
			"sentinel announce-ip " + ip, "protected-mode no", "dir " + p.Dir, "logfile " + p.log()}, users...)
		p.args = []string{writeConf(t, p.Dir, "sentinel.conf", conf)}
		p.start(t)
		w.sentinels = append(w.sentinels, p)
	}
	if err := w.Await(context.Background(), "the replicas linked and the sentinels answering", func(o machine.Observation) bool {
		for _, n := range o.Nodes[1:] {
			if !n.Valkey.LinkUp {
				return false
			}
		}
		for _, s := range o.Sentinels {
			if !s.Reachable {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return w
}

// Apply carries a out as the operator's actuator table does (operator/reconcile/cluster's
// row for the kind calls the same function of actuators/valkey).
func (w *realSentinelWorld) Apply(ctx context.Context, a machine.Action) error {
	switch a := a.(type) {
	case machine.SentinelMonitor:
		return w.pool.SentinelMonitor(ctx, a.IP, a.ID, a.PrimaryIP, a.Settings, "any")
	case machine.SentinelRemove:
		return w.pool.SentinelRemove(ctx, a.IP, a.ID)
	case machine.SentinelReset:
		return w.pool.SentinelReset(ctx, a.IP, a.ID)
	case machine.RollSentinel:
		// The operator's actuator deletes the pod once the sentinel answered with the id; the
		// pod made again runs the same file. Here the process stops (SIGKILL, harsher than a
		// pod's SIGTERM: Sentinel writes its file on every change, not on the way out) and
		// starts again from its file.
		if err := w.pool.SentinelAnswersAs(ctx, a.IP, a.ID); err != nil {
			return err
		}
		for _, p := range w.sentinels {
			if p.Name == a.Sentinel {
				p.Kill()
				p.start(w.t)
				return nil
			}
		}
		return fmt.Errorf("no sentinel %s", a.Sentinel)
	case machine.HoldBack:
		return w.pool.HoldBack(ctx, w.server(a.Node).IP, a.RunID)
	case machine.SentinelHandOver:
		return w.pool.SentinelHandOver(ctx, a.IP, a.ID, w.server(a.From).IP, a.FromRunID, a.ToIP, a.ToRunID, 5*time.Second)
	}
	return fmt.Errorf("%s: not an action on sentinels", a.Kind())
}

// server is the data node named name (an empty one when there is none: the action then
// fails on its address).
func (w *realSentinelWorld) server(name string) *proc {
	for _, p := range w.servers {
		if p.Name == name {
			return p
		}
	}
	return &proc{Proc: &localproc.Proc{}}
}

// Observe is the data nodes' roles and links (INFO) and the operator's survey of each sentinel.
func (w *realSentinelWorld) Observe(ctx context.Context) (machine.Observation, error) {
	o := machine.Observation{Time: time.Now(), Spec: machine.Spec{Mode: machine.ModeSentinel, Sentinels: 3}}
	for i, p := range w.servers {
		n := machine.Node{Name: p.Name, Shard: 0, Ordinal: i, Pod: machine.Pod{Exists: true, IP: p.IP}}
		if in := infoAs(p.Addr(), valkey.UserOperator); in["role"] != "" {
			n.Reachable = true
			n.Valkey.Role = machine.RoleReplica
			if in["role"] == "master" {
				n.Valkey.Role = machine.RolePrimary
			}
			n.Valkey.PrimaryHost, n.Valkey.LinkUp = in["master_host"], in["master_link_status"] == "up"
			n.Valkey.RunID = in["run_id"]
			// These processes run no users but the operator's and default: a replica at
			// priority 0 is one held back.
			n.Valkey.HeldBack = n.Valkey.Role == machine.RoleReplica && in["slave_priority"] == "0"
		}
		o.Nodes = append(o.Nodes, n)
	}
	for _, p := range w.sentinels {
		s, err := w.pool.SurveySentinel(ctx, p.IP)
		if err != nil {
			w.t.Logf("survey of %s: %v", p.Name, err)
		}
		s.Name = p.Name
		o.Sentinels = append(o.Sentinels, s)
	}
	return o, nil
}

// Await polls until cond holds.
func (w *realSentinelWorld) Await(ctx context.Context, what string, cond func(machine.Observation) bool) error {
	deadline := time.Now().Add(realTimeout)
	for {
		o, _ := w.Observe(ctx)
		if cond(o) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s; last seen: %s", what, realTimeout, conformance.DescribeSentinels(o))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestRealSentinelActuatorsConformToTheTable(t *testing.T) {
	for vi, version := range []string{"8.0", "9.1"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			w := newRealSentinelWorld(t, binDir(t, version), 100+vi)
			conformance.RunSentinel(context.Background(), w, func(row conformance.Row, err error) {
				if err != nil {
					t.Errorf("%s: %v", row.Name, err)
				} else {
					t.Logf("ok: %s", row.Name)
				}
			})
		})
	}
}

// newFixedPortProc is a process on ip at port, failing clearly when the port is taken (a
// process of an earlier run left behind).
func newFixedPortProc(t *testing.T, name, ip, dir string, port int) *localproc.Proc {
	t.Helper()
	p := localproc.New(t, name, ip, dir)
	p.Port = port
	ln, err := net.Listen("tcp", p.Addr())
	if err != nil {
		t.Fatalf("%s: %s is taken (a process of an earlier run?): %v", name, p.Addr(), err)
	}
	_ = ln.Close()
	return p
}

func writeConf(t *testing.T, dir, name string, lines []string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
