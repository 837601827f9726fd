package operatorsuite

// The reference of BenchmarkUnplannedFailoverRTO: the same unplanned failover handled by
// valkey-sentinel. Three valkey-server processes (one primary, two replicas) and three
// valkey-sentinel processes (quorum 2), plain processes on loopback addresses of their own
// (127.240.0.0/24, free ports), a client that asks Sentinel where the primary is, SIGKILL of
// the primary. Every run starts a fresh set and removes it (processes and directory), also
// when the benchmark fails.

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/e2e/localproc"
	"github.com/valkey-fsm/valkey-operator/internal/resp"
)

const sentinelMasterName = "bench"

// vproc is one valkey-server or valkey-sentinel process.
type vproc = localproc.Proc

// logPath is where p's Valkey writes its log (--logfile).
func logPath(p *vproc) string { return filepath.Join(p.Dir, p.Name+".log") }

// sentinelSet is three servers and three sentinels.
type sentinelSet struct {
	dir       string
	servers   []*vproc
	sentinels []*vproc
	downAfter time.Duration
	stopOnce  sync.Once
}

// startSentinelSet starts the servers (the first is the primary) and the sentinels, and
// waits until every sentinel monitors the primary with both replicas and both other
// sentinels known. downAfter is Sentinel's down-after-milliseconds; the other Sentinel
// settings are its defaults (failover-timeout 180 s, parallel-syncs 1).
func startSentinelSet(tb testing.TB, downAfter time.Duration) *sentinelSet {
	tb.Helper()
	s := &sentinelSet{dir: tb.TempDir(), downAfter: downAfter}
	tb.Cleanup(s.stop)
	for i := 0; i < 3; i++ {
		ip := fmt.Sprintf("127.240.0.%d", i+1)
		name := fmt.Sprintf("server-%d", i)
		p := localproc.New(tb, name, ip, filepath.Join(s.dir, name))
		args := []string{"--bind", p.IP, "--port", strconv.Itoa(p.Port), "--dir", p.Dir, "--logfile", logPath(p),
			"--save", "", "--appendonly", "no", "--protected-mode", "no",
			// Replicas and sentinels must see each other's own addresses, not 127.0.0.1.
			"--replica-announce-ip", p.IP, "--bind-source-addr", p.IP,
			// Only speeds up the initial full syncs of a fresh set; a failover's re-pointed
			// replica continues with a partial resync.
			"--repl-diskless-sync-delay", "0"}
		if i > 0 {
			args = append(args, "--replicaof", s.servers[0].IP, strconv.Itoa(s.servers[0].Port))
		}
		p.Start(tb, "valkey-server", args...)
		s.servers = append(s.servers, p)
	}
	for _, p := range s.servers {
		waitRESP(tb, p.Addr(), 10*time.Second, "PING")
	}
	for _, p := range s.servers[1:] {
		waitUntil(tb, 20*time.Second, p.Name+" in sync", func() bool {
			info := infoOf(p.Addr(), "replication")
			return info["master_link_status"] == "up"
		})
	}
	for i := 0; i < 3; i++ {
		ip := fmt.Sprintf("127.240.0.%d", i+11)
		name := fmt.Sprintf("sentinel-%d", i)
		p := localproc.New(tb, name, ip, filepath.Join(s.dir, name))
		conf := strings.Join([]string{
			"bind " + p.IP,
			"port " + strconv.Itoa(p.Port),
			"bind-source-addr " + p.IP,
			"sentinel announce-ip " + p.IP,
			"protected-mode no",
			"dir " + p.Dir,
			"logfile " + logPath(p),
			fmt.Sprintf("sentinel monitor %s %s %d 2", sentinelMasterName, s.servers[0].IP, s.servers[0].Port),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", sentinelMasterName, downAfter.Milliseconds()),
		}, "\n") + "\n"
		path := filepath.Join(p.Dir, "sentinel.conf")
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			tb.Fatal(err)
		}
		p.Start(tb, "valkey-sentinel", path)
		s.sentinels = append(s.sentinels, p)
	}
	for _, p := range s.sentinels {
		waitUntil(tb, 30*time.Second, p.Name+" knows the whole set", func() bool {
			m := sentinelMaster(p.Addr())
			return m["flags"] == "master" && m["num-slaves"] == "2" && m["num-other-sentinels"] == "2" &&
				m["ip"] == s.servers[0].IP && m["port"] == strconv.Itoa(s.servers[0].Port)
		})
	}
	return s
}

// stop kills every process of the set; the directory goes with tb.TempDir.
func (s *sentinelSet) stop() {
	s.stopOnce.Do(func() {
		for _, p := range append(append([]*vproc(nil), s.sentinels...), s.servers...) {
			p.Kill()
		}
	})
}

// primary is the server Sentinel started with as the primary (the one the run kills).
func (s *sentinelSet) primary() *vproc { return s.servers[0] }

// dialer is a Sentinel client: ask a sentinel where the primary is
// (SENTINEL GET-MASTER-ADDR-BY-NAME), connect there; after any failure (of the question, the
// connection or a write) ask the next sentinel.
func (s *sentinelSet) dialer(timeout time.Duration) func() (*resp.Conn, error) {
	var mu sync.Mutex
	next := 0
	return func() (*resp.Conn, error) {
		mu.Lock()
		sp := s.sentinels[next%len(s.sentinels)]
		next++
		mu.Unlock()
		sc, err := resp.Dial(sp.Addr(), netip.Addr{}, "", "", timeout)
		if err != nil {
			return nil, err
		}
		v, err := sc.Do(timeout, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", sentinelMasterName)
		_ = sc.Close()
		if err != nil {
			return nil, err
		}
		a, ok := v.([]any)
		if !ok || len(a) != 2 {
			return nil, fmt.Errorf("sentinel %s: no primary: %v", sp.Name, v)
		}
		host, _ := a[0].(string)
		port, _ := a[1].(string)
		return resp.Dial(net.JoinHostPort(host, port), netip.Addr{}, "", "", timeout)
	}
}

// sentinelEvents is when Sentinel logged its failover steps (earliest over the sentinels):
// +sdown (a sentinel's detection), +odown (the quorum agrees), +promoted-slave,
// +switch-master (clients asking are told the new primary).
func (s *sentinelSet) events() map[string]time.Time {
	out := map[string]time.Time{}
	for _, p := range s.sentinels {
		f, err := os.Open(logPath(p))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// 2512:X 21 Nov 2026 06:47:37.491 # +sdown master bench 127.240.0.1 40123
			fields := strings.Fields(sc.Text())
			if len(fields) < 7 || !strings.HasPrefix(fields[6], "+") {
				continue
			}
			at, err := time.ParseInLocation("2 Jan 2006 15:04:05.000", strings.Join(fields[1:5], " "), time.Local)
			if err != nil {
				continue
			}
			ev := fields[6]
			if ev == "+sdown" && (len(fields) < 8 || fields[7] != "master") {
				continue // a sentinel or replica marked down, not the primary
			}
			if prev, ok := out[ev]; !ok || at.Before(prev) {
				out[ev] = at
			}
		}
		_ = f.Close()
	}
	return out
}

// ---- small RESP helpers --------------------------------------------------------------

func waitUntil(tb testing.TB, timeout time.Duration, what string, f func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRESP waits until a command succeeds at addr.
func waitRESP(tb testing.TB, addr string, timeout time.Duration, args ...string) {
	tb.Helper()
	waitUntil(tb, timeout, addr+" answers "+args[0], func() bool {
		c, err := resp.Dial(addr, netip.Addr{}, "", "", time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		_, err = c.Do(time.Second, args...)
		return err == nil
	})
}

// infoOf returns the fields of INFO section at addr (empty when it does not answer).
func infoOf(addr, section string) map[string]string {
	return authFields(addr, "", "INFO", section)
}

// sentinelMaster is SENTINEL MASTER <name> as a map (empty when it does not answer).
func sentinelMaster(addr string) map[string]string {
	c, err := resp.Dial(addr, netip.Addr{}, "", "", time.Second)
	if err != nil {
		return map[string]string{}
	}
	defer c.Close()
	v, err := c.Do(time.Second, "SENTINEL", "MASTER", sentinelMasterName)
	if err != nil {
		return map[string]string{}
	}
	return resp.Fields(v)
}

// sentinelRun is one run of the reference: a fresh set, a Sentinel client writing, SIGKILL of
// the primary, time to the first write accepted afterwards; then the set is removed.
func sentinelRun(tb testing.TB, downAfter time.Duration, prefix string) rtoRun {
	tb.Helper()
	s := startSentinelSet(tb, downAfter)
	defer s.stop()
	w := startLoadWriter(tb, prefix, s.dialer(benchOpTimeout))
	defer w.halt()
	w.waitFlowing(tb, 300, 30*time.Second)
	t0 := time.Now()
	s.primary().Kill()
	t1 := time.Now()
	first := w.firstAckOn(tb, t1, downAfter+2*time.Minute)
	run := rtoRun{rto: first.end.Sub(t0), phases: map[string]time.Duration{}}
	time.Sleep(300 * time.Millisecond)
	w.halt()
	acks := w.snapshot()
	run.acked = len(acks)
	missing := missingKeys(tb, s.dialer(2*time.Second), acks)
	run.lost = len(missing)
	ev := s.events()
	for _, name := range []string{"+sdown", "+odown", "+promoted-slave", "+switch-master"} {
		if at, ok := ev[name]; ok {
			run.phases[name] = at.Sub(t0)
		}
	}
	run.detail = fmt.Sprintf("sdown +%.3fs odown +%.3fs promoted +%.3fs switch-master +%.3fs first write +%.3fs",
		run.phases["+sdown"].Seconds(), run.phases["+odown"].Seconds(), run.phases["+promoted-slave"].Seconds(),
		run.phases["+switch-master"].Seconds(), run.rto.Seconds()) + lostTimes(missing, t0)
	return run
}
