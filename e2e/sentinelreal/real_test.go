package sentinelreal

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster/netfault"
	"github.com/valkey-fsm/valkey-operator/e2e/localproc"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
	"github.com/valkey-fsm/valkey-operator/internal/resp"
)

// The real side of the table: valkey-server and valkey-sentinel processes on loopback
// addresses of this package (127.237.<version>.x: servers .1-.3, sentinels .11-.13, a
// renewed sentinel .21-.23), each process bound to its address for listening and sending so
// that an nftables partition between addresses cuts exactly what it names.

const masterName = "mymaster"

// realTimeout bounds a wait: a failover of down-after 2 s takes a few seconds, a restarted
// old primary is converted after up to two INFO periods (10 s each) and eight seconds more.
const realTimeout = 60 * time.Second

// proc is a process with the command it restarts with.
type proc struct {
	*localproc.Proc
	bin  string
	args []string
}

func (p *proc) log() string { return filepath.Join(p.Dir, "log") }

func (p *proc) start(t *testing.T) { p.Start(t, p.bin, p.args...) }

type realGroup struct {
	dir       string
	binDir    string
	version   int // third octet of the addresses
	servers   []*proc
	sentinels []*proc
	// retired are sentinels replaced by a renewal (their logs still count).
	retired []*proc
	// ordinalOf maps a sentinel process to its ordinal.
	ordinalOf map[*proc]int
	nft       *netfault.Table
}

func (g *realGroup) newProc(t *testing.T, name, ip, bin string) *proc {
	return &proc{Proc: localproc.New(t, name, ip, filepath.Join(g.dir, name)), bin: filepath.Join(g.binDir, bin)}
}

func newRealGroup(t *testing.T, binDir string, version int) *realGroup {
	g := &realGroup{dir: t.TempDir(), binDir: binDir, version: version, ordinalOf: map[*proc]int{}}
	t.Cleanup(g.stop)
	for i := 0; i < 3; i++ {
		p := g.newProc(t, fmt.Sprintf("server-%d", i), fmt.Sprintf("127.237.%d.%d", version, i+1), "valkey-server")
		p.args = []string{"--bind", p.IP, "--port", strconv.Itoa(p.Port), "--dir", p.Dir, "--logfile", p.log(),
			"--save", "", "--appendonly", "no", "--protected-mode", "no",
			"--replica-announce-ip", p.IP, "--bind-source-addr", p.IP, "--repl-diskless-sync-delay", "0",
			"--replica-priority", strconv.Itoa([]int{100, 10, 20}[i])}
		if i > 0 {
			p.args = append(p.args, "--replicaof", g.servers[0].IP, strconv.Itoa(g.servers[0].Port))
		}
		p.start(t)
		g.servers = append(g.servers, p)
	}
	g.await(t, "the replicas sync", func(observed) bool {
		return info(g.servers[1].Addr())["master_link_status"] == "up" && info(g.servers[2].Addr())["master_link_status"] == "up"
	})
	for i := 0; i < 3; i++ {
		p := g.newSentinel(t, fmt.Sprintf("sentinel-%d", i), fmt.Sprintf("127.237.%d.%d", version, i+11), 0)
		g.ordinalOf[p] = i
		g.sentinels = append(g.sentinels, p)
	}
	g.await(t, "the sentinels find the replicas and each other", func(o observed) bool {
		for _, p := range g.sentinels {
			m := sentinelMaster(p.Addr())
			if m["num-slaves"] != "2" || m["num-other-sentinels"] != "2" || m["ip"] != g.servers[0].IP {
				return false
			}
		}
		return true
	})
	return g
}

// newSentinel starts a sentinel from the template: a config with no id, monitoring server
// master.
func (g *realGroup) newSentinel(t *testing.T, name, ip string, master int) *proc {
	p := g.newProc(t, name, ip, "valkey-sentinel")
	m := g.servers[master]
	conf := strings.Join([]string{
		"bind " + p.IP,
		"port " + strconv.Itoa(p.Port),
		"bind-source-addr " + p.IP,
		"sentinel announce-ip " + p.IP,
		"protected-mode no",
		"dir " + p.Dir,
		"logfile " + p.log(),
		fmt.Sprintf("sentinel monitor %s %s %d 2", masterName, m.IP, m.Port),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", masterName, downAfterSeconds*1000),
		fmt.Sprintf("sentinel failover-timeout %s %d", masterName, failoverTimeoutSeconds*1000),
		fmt.Sprintf("sentinel parallel-syncs %s 1", masterName),
	}, "\n") + "\n"
	path := filepath.Join(p.Dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p.args = []string{path}
	p.start(t)
	return p
}

func (g *realGroup) stop() {
	if g.nft != nil {
		_ = g.nft.Close()
	}
	for _, p := range append(append(append([]*proc(nil), g.sentinels...), g.retired...), g.servers...) {
		p.Kill()
	}
}

func (g *realGroup) serverAt(ip string) int {
	for i, p := range g.servers {
		if p.IP == ip {
			return i
		}
	}
	return -1
}

func (g *realGroup) observe() observed {
	var o observed
	for _, p := range g.sentinels {
		s := sentinelObs{master: -1}
		if m := sentinelMaster(p.Addr()); len(m) > 0 {
			s.up = true
			if a := masterAddr(p.Addr()); a != "" {
				s.master = g.serverAt(a)
			}
			s.configEpoch, _ = strconv.ParseUint(m["config-epoch"], 10, 64)
			s.others, _ = strconv.Atoi(m["num-other-sentinels"])
			s.failover = strings.Contains(m["flags"], "failover")
			s.quorum = ckquorum(p.Addr())
		}
		o.sentinels = append(o.sentinels, s)
	}
	for _, p := range g.servers {
		s := serverObs{master: -1}
		if r := info(p.Addr()); len(r) > 0 {
			s.up = true
			s.primary = r["role"] == "master"
			if !s.primary {
				s.master = g.serverAt(r["master_host"])
			}
		}
		o.servers = append(o.servers, s)
	}
	for _, p := range append(append([]*proc(nil), g.sentinels...), g.retired...) {
		for range promotions(p.log()) {
			o.promotedBy = append(o.promotedBy, g.ordinalOf[p])
		}
	}
	return o
}

// promotions are the +promoted-slave lines of a sentinel's log.
func promotions(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), " +promoted-slave ") {
			out = append(out, sc.Text())
		}
	}
	return out
}

func (g *realGroup) await(t *testing.T, what string, ok func(observed) bool) observed {
	t.Helper()
	deadline := time.Now().Add(realTimeout)
	for {
		o := g.observe()
		if ok(o) {
			return o
		}
		if time.Now().After(deadline) {
			g.fail(t, "real: %s: not within %s\n%s", what, realTimeout, o)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (g *realGroup) fail(t *testing.T, format string, args ...any) {
	t.Helper()
	for _, p := range append(append([]*proc(nil), g.sentinels...), g.retired...) {
		if data, err := os.ReadFile(p.log()); err == nil {
			t.Logf("%s log:\n%s", p.Name, data)
		}
	}
	t.Fatalf(format, args...)
}

func (g *realGroup) killServer(t *testing.T, i int) { g.servers[i].Kill() }

func (g *realGroup) startServer(t *testing.T, i int) {
	p := g.servers[i]
	var args []string
	for j := 0; j < len(p.args); j++ {
		if p.args[j] == "--replicaof" {
			j += 2
			continue
		}
		args = append(args, p.args[j])
	}
	p.args = args
	p.start(t)
}

func (g *realGroup) addrs(servers, sentinels []int) []netip.Addr {
	var out []netip.Addr
	for _, i := range servers {
		out = append(out, netip.MustParseAddr(g.servers[i].IP))
	}
	for _, i := range sentinels {
		out = append(out, netip.MustParseAddr(g.sentinels[i].IP))
	}
	return out
}

func (g *realGroup) partition(t *testing.T, servers, sentinels []int) {
	if g.nft == nil {
		tb, err := netfault.New(fmt.Sprintf("sentinelreal_%d", g.version))
		if err != nil {
			t.Fatal(err)
		}
		g.nft = tb
	}
	var otherServers, otherSentinels []int
	for i := range g.servers {
		if !contains(servers, i) {
			otherServers = append(otherServers, i)
		}
	}
	for i := range g.sentinels {
		if !contains(sentinels, i) {
			otherSentinels = append(otherSentinels, i)
		}
	}
	for _, a := range g.addrs(servers, sentinels) {
		for _, b := range g.addrs(otherServers, otherSentinels) {
			if err := g.nft.Partition(a, b); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (g *realGroup) heal(t *testing.T) {
	if g.nft != nil {
		if err := g.nft.Heal(); err != nil {
			t.Fatal(err)
		}
	}
}

func (g *realGroup) killSentinel(t *testing.T, i int) { g.sentinels[i].Kill() }

func (g *realGroup) renewSentinel(t *testing.T, i, master int) {
	old := g.sentinels[i]
	old.Kill()
	g.retired = append(g.retired, old)
	p := g.newSentinel(t, fmt.Sprintf("sentinel-%d-renewed", i), fmt.Sprintf("127.237.%d.%d", g.version, i+21), master)
	g.ordinalOf[p] = i
	g.sentinels[i] = p
}

func (g *realGroup) sentinelFailover(t *testing.T, i int) error {
	v, err := do(g.sentinels[i].Addr(), "SENTINEL", "FAILOVER", masterName)
	if err != nil {
		return err
	}
	if v != "OK" {
		return fmt.Errorf("SENTINEL FAILOVER: %v", v)
	}
	return nil
}

// ---- RESP ------------------------------------------------------------------------------

func do(addr string, args ...string) (any, error) { return doAs(addr, "", args...) }

// doAs is do authenticated as user (these processes let every user in without a password).
func doAs(addr, user string, args ...string) (any, error) {
	pass := ""
	if user != "" {
		pass = "any"
	}
	c, err := resp.Dial(addr, netip.Addr{}, user, pass, time.Second)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	return c.Do(time.Second, args...)
}

// info is INFO server and replication as a map (empty when the server does not answer).
func info(addr string) map[string]string { return infoAs(addr, "") }

// infoAs is info asked as user: the operator's user still answers on a node whose
// application user (default) a hand-over closed.
func infoAs(addr, user string) map[string]string {
	out := map[string]string{}
	v, err := doAs(addr, user, "INFO", "server", "replication")
	s, _ := v.(string)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(s, "\n") {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = val
		}
	}
	return out
}

// sentinelMaster is SENTINEL MASTER as a map (empty when the sentinel does not answer).
func sentinelMaster(addr string) map[string]string {
	v, err := do(addr, "SENTINEL", "MASTER", masterName)
	if err != nil {
		return map[string]string{}
	}
	return resp.Fields(v)
}

// ckquorum is SENTINEL CKQUORUM's verdict.
func ckquorum(addr string) quorumVerdict {
	v, err := do(addr, "SENTINEL", "CKQUORUM", masterName)
	switch {
	case err != nil && strings.Contains(err.Error(), "NOQUORUM"):
		return quorumNo
	case err == nil && strings.HasPrefix(fmt.Sprint(v), "OK"):
		return quorumOK
	}
	return quorumUnknown
}

// masterAddr is GET-MASTER-ADDR-BY-NAME's IP.
func masterAddr(addr string) string {
	v, err := do(addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterName)
	if err != nil {
		return ""
	}
	a, _ := v.([]any)
	if len(a) != 2 {
		return ""
	}
	ip, _ := a[0].(string)
	return ip
}

// ---- versions ----------------------------------------------------------------------------

// binDirs are the Valkey versions the project runs: 8.0 on PATH, 9.1 built by
// hack/valkey-9.1.sh (cached; `make tools` builds it ahead of the tests).
func binDir(t *testing.T, version string) string {
	t.Helper()
	switch version {
	case "8.0":
		p, err := exec.LookPath("valkey-sentinel")
		if err != nil {
			t.Skip("valkey-sentinel 8.0 is not on PATH")
		}
		return filepath.Dir(p)
	default:
		root, err := kubeassets.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(filepath.Join(root, "hack", "valkey-9.1.sh")).Output()
		if err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Fatalf("hack/valkey-9.1.sh: %v: %s", err, exit.Stderr)
			}
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
}

// The versions and scenarios run at once: each set has addresses of its own, and the
// scenarios mostly wait on Sentinel's timers.
func TestScenariosAgainstRealSentinels(t *testing.T) {
	for vi, version := range []string{"8.0", "9.1"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			dir := binDir(t, version)
			for si, sc := range scenarios {
				octet := 1 + vi*10 + si
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					if sc.partition {
						tb, err := netfault.New(fmt.Sprintf("sentinelreal_probe_%d", octet))
						if err != nil {
							t.Skipf("needs nftables: %v", err)
						}
						_ = tb.Close()
					}
					start := time.Now()
					sc.play(t, newRealGroup(t, dir, octet))
					t.Logf("%s", time.Since(start).Round(time.Millisecond))
				})
			}
		})
	}
}
