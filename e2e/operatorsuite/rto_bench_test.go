package operatorsuite

// Shared pieces of the failover benchmarks (failover_bench_test.go, sentinel_bench_test.go,
// switchover_bench_test.go): a bare RESP client, a paced writer that records every
// acknowledged write, percentiles, and a tap on the operator's log that times its
// transitions and actions.

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
	"github.com/valkey-fsm/valkey-operator/internal/resp"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// What a benchmark client does, as issue 5 specifies it: plain SET, every step (dial, AUTH,
// SET, a question to Sentinel) bounded by 100 ms, reconnect after any failure.
const (
	benchOpTimeout = 100 * time.Millisecond
	// benchPace: at most one write per millisecond. Unpaced, the client (plus the service
	// proxy and valkey-server) would take a whole core of a 2-core machine away from the
	// operator and the control plane it measures; 1 ms still resolves gaps to ~1 ms.
	benchPace = time.Millisecond
	// benchRetryPause: after a failed attempt, so that a refused connection does not spin.
	benchRetryPause = 10 * time.Millisecond
)

// benchRuns is how many repetitions a scenario runs inside one benchmark iteration;
// VKFSM_BENCH_RUNS overrides def (for a quick look; the documented figures use def).
func benchRuns(def int) int { return envInt("VKFSM_BENCH_RUNS", def) }

// envInt is the positive number in the environment variable name, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// The benchmarks speak RESP through internal/resp: one command at a time, every command
// bounded by a deadline, so what they measure is exactly the client behaviour they describe,
// with no retry, pipelining or topology discovery of a client library in between.

// serviceDialer connects as an application does through the client Service: dial, AUTH.
func serviceDialer(addr, pass string, timeout time.Duration) func() (*resp.Conn, error) {
	return func() (*resp.Conn, error) {
		c, err := resp.Dial(addr, netip.Addr{}, "", "", timeout)
		if err != nil {
			return nil, err
		}
		if pass != "" {
			if _, err := c.Do(timeout, "AUTH", pass); err != nil {
				_ = c.Close()
				return nil, err
			}
		}
		return c, nil
	}
}

// ---- the writer -----------------------------------------------------------------------

// ack is one acknowledged write.
type ack struct {
	key        string
	start, end time.Time
	conn       time.Time // when the connection it went over was made
}

// loadWriter writes SET <prefix>-<i> v one at a time over a connection it (re)makes with
// dial, each SET bounded by benchOpTimeout, at most one per benchPace, reconnecting after
// any failure, and records every acknowledged write.
type loadWriter struct {
	prefix string
	dial   func() (*resp.Conn, error)
	pace   time.Duration

	mu       sync.Mutex
	acks     []ack
	failures int
	lastErr  error

	stop, done chan struct{}
	halted     sync.Once
}

func startLoadWriter(tb testing.TB, prefix string, dial func() (*resp.Conn, error)) *loadWriter {
	return startPacedWriter(tb, prefix, dial, benchPace)
}

// startPacedWriter is startLoadWriter with at most one write per pace (many writers at once
// must not take the machine away from what they measure).
func startPacedWriter(tb testing.TB, prefix string, dial func() (*resp.Conn, error), pace time.Duration) *loadWriter {
	w := &loadWriter{prefix: prefix, dial: dial, pace: pace, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	tb.Cleanup(w.halt)
	return w
}

func (w *loadWriter) run() {
	defer close(w.done)
	var c *resp.Conn
	defer func() {
		if c != nil {
			_ = c.Close()
		}
	}()
	fail := func(err error) {
		w.mu.Lock()
		w.failures++
		w.lastErr = err
		w.mu.Unlock()
		select {
		case <-w.stop:
		case <-time.After(benchRetryPause):
		}
	}
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			return
		default:
		}
		if c == nil {
			var err error
			if c, err = w.dial(); err != nil {
				c = nil
				fail(err)
				continue
			}
		}
		key := fmt.Sprintf("%s-%d", w.prefix, i)
		start := time.Now()
		if _, err := c.Do(benchOpTimeout, "SET", key, "v"); err != nil {
			_ = c.Close()
			c = nil
			fail(err)
			continue
		}
		end := time.Now()
		w.mu.Lock()
		w.acks = append(w.acks, ack{key: key, start: start, end: end, conn: c.Made})
		w.mu.Unlock()
		if d := time.Until(start.Add(w.pace)); d > 0 {
			time.Sleep(d)
		}
	}
}

// halt stops the writer and waits for it.
func (w *loadWriter) halt() {
	w.halted.Do(func() { close(w.stop) })
	<-w.done
}

func (w *loadWriter) snapshot() []ack {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]ack(nil), w.acks...)
}

func (w *loadWriter) status() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d acknowledged, %d failed attempts, last error: %v", len(w.acks), w.failures, w.lastErr)
}

// waitFlowing waits until the writer has had n writes acknowledged since it started.
func (w *loadWriter) waitFlowing(tb testing.TB, n int, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		got := len(w.acks)
		w.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("writer: fewer than %d writes within %s: %s", n, timeout, w.status())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstAckOn waits for the first acknowledged write sent over a connection made at or
// after t: the first write the system accepted after a fault injected before t (writes on a
// connection older than the fault could have been accepted by the old primary before it
// died).
func (w *loadWriter) firstAckOn(tb testing.TB, t time.Time, timeout time.Duration) ack {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	seen := 0
	for {
		w.mu.Lock()
		for ; seen < len(w.acks); seen++ {
			if a := w.acks[seen]; !a.conn.Before(t) && !a.start.Before(t) {
				w.mu.Unlock()
				return a
			}
		}
		w.mu.Unlock()
		if time.Now().After(deadline) {
			tb.Fatalf("writer: no write accepted within %s after the fault: %s", timeout, w.status())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// longestGap is the longest time between consecutive acknowledged writes whose second one
// was acknowledged at or after from (zero value: all), and when it started.
func longestGap(acks []ack, from time.Time) (time.Duration, time.Time) {
	var longest time.Duration
	var at time.Time
	for i := 1; i < len(acks); i++ {
		if acks[i].end.Before(from) {
			continue
		}
		if g := acks[i].end.Sub(acks[i-1].end); g > longest {
			longest, at = g, acks[i-1].end
		}
	}
	return longest, at
}

// gapSince is the longest gap between acknowledged writes from t0 on, and where it starts; a
// writer stopped at stopped that had not written since its last acknowledgement counts that
// stretch too (writes had not resumed: a lower bound).
func gapSince(acks []ack, t0, stopped time.Time) (time.Duration, time.Time) {
	gap, at := longestGap(acks, t0)
	if n := len(acks); n > 0 && stopped.Sub(acks[n-1].end) > gap {
		gap, at = stopped.Sub(acks[n-1].end), acks[n-1].end
	}
	return gap, at
}

// missingKeys returns the acknowledged writes that a fresh connection (made with dial) no
// longer finds: acknowledged writes lost.
func missingKeys(tb testing.TB, dial func() (*resp.Conn, error), acks []ack) []ack {
	tb.Helper()
	var c *resp.Conn
	deadline := time.Now().Add(time.Minute)
	for c == nil {
		var err error
		if c, err = dial(); err != nil {
			c = nil
			if time.Now().After(deadline) {
				tb.Fatalf("checking acknowledged writes: cannot connect: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	defer c.Close()
	exists := func(batch []ack) int {
		args := []string{"EXISTS"}
		for _, a := range batch {
			args = append(args, a.key)
		}
		v, err := c.Do(10*time.Second, args...)
		if err != nil {
			tb.Fatalf("checking acknowledged writes: EXISTS: %v", err)
		}
		return int(v.(int64))
	}
	var missing []ack
	const size = 500
	for i := 0; i < len(acks); i += size {
		batch := acks[i:min(i+size, len(acks))]
		if exists(batch) == len(batch) {
			continue
		}
		for _, a := range batch {
			if exists([]ack{a}) == 0 {
				missing = append(missing, a)
			}
		}
	}
	return missing
}

// lostTimes says when the lost writes had been acknowledged, relative to t0.
func lostTimes(missing []ack, t0 time.Time) string {
	var b strings.Builder
	for i, a := range missing {
		if i == 10 {
			fmt.Fprintf(&b, "\n    ... %d more lost", len(missing)-i)
			break
		}
		fmt.Fprintf(&b, "\n    LOST %s: sent +%.3fs, acknowledged +%.3fs over a connection made at +%.3fs", a.key, a.start.Sub(t0).Seconds(), a.end.Sub(t0).Seconds(), a.conn.Sub(t0).Seconds())
	}
	return b.String()
}

// ---- statistics -----------------------------------------------------------------------

// pct is the nearest-rank percentile q (0..1] of ds: with 10 samples p50 is the 5th
// smallest and p99 the largest.
func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func secs(d time.Duration) float64 { return d.Seconds() }
func msecs(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}

func durs(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.Round(time.Millisecond).String()
	}
	return strings.Join(parts, " ")
}

// ---- a tap on the operator's log ----------------------------------------------------------

// opLogRecord is a transition, an action done or an action failure from the operator's log.
type opLogRecord struct {
	at        time.Time
	ns, name  string
	kind      string // "transition", "action", "failed"
	event     string // transition: its event; action: the action; failed: the error
	from, to  string
	message   string
	reconcile string
}

// opLogTap is an io.Writer for manager.Config.LogOutput (next to the suite's log) that
// keeps the operator's transitions and actions with their time stamps.
type opLogTap struct {
	mu   sync.Mutex
	part []byte
	recs []opLogRecord
}

func (t *opLogTap) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, p...)
	for {
		i := strings.IndexByte(string(t.part), '\n')
		if i < 0 {
			break
		}
		t.parse(t.part[:i])
		t.part = t.part[i+1:]
	}
	return len(p), nil
}

func (t *opLogTap) parse(line []byte) {
	var l struct {
		TS        float64 `json:"ts"`
		Msg       string  `json:"msg"`
		Namespace string  `json:"namespace"`
		Name      string  `json:"name"`
		Event     string  `json:"event"`
		From      string  `json:"from"`
		To        string  `json:"to"`
		Message   string  `json:"message"`
		Action    string  `json:"action"`
		Error     string  `json:"error"`
		Reconcile string  `json:"reconcileID"`
	}
	if json.Unmarshal(line, &l) != nil {
		return
	}
	r := opLogRecord{at: time.Unix(0, int64(l.TS*1e9)), ns: l.Namespace, name: l.Name, from: l.From, to: l.To, message: l.Message, reconcile: l.Reconcile}
	switch {
	case l.Msg == "transition":
		r.kind, r.event = "transition", l.Event
	case l.Msg == "action done":
		r.kind, r.event = "action", l.Action
	case strings.HasPrefix(l.Msg, "action failed"):
		r.kind, r.event = "failed", l.Error
	default:
		return
	}
	t.recs = append(t.recs, r)
}

// since returns the records of one cluster at or after t.
func (t *opLogTap) since(ns, name string, from time.Time) []opLogRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []opLogRecord
	for _, r := range t.recs {
		if r.ns == ns && r.name == name && !r.at.Before(from) {
			out = append(out, r)
		}
	}
	return out
}

// firstTransition is the time of the first transition with event ev in recs (ok false:
// none).
func firstTransition(recs []opLogRecord, ev string) (time.Time, bool) {
	for _, r := range recs {
		if r.kind == "transition" && r.event == ev {
			return r.at, true
		}
	}
	return time.Time{}, false
}

// firstAction is the time of the first action done whose description starts with prefix.
func firstAction(recs []opLogRecord, prefix string) (time.Time, bool) {
	for _, r := range recs {
		if r.kind == "action" && strings.HasPrefix(strings.ToLower(r.event), strings.ToLower(prefix)) {
			return r.at, true
		}
	}
	return time.Time{}, false
}

// timeline renders recs relative to t0, for the benchmark log.
func timeline(recs []opLogRecord, t0 time.Time) string {
	var b strings.Builder
	for _, r := range recs {
		switch r.kind {
		case "transition":
			fmt.Fprintf(&b, "\n    +%6.3fs transition %s -> %s %s: %s", r.at.Sub(t0).Seconds(), r.from, r.to, r.event, r.message)
		case "action":
			fmt.Fprintf(&b, "\n    +%6.3fs action %s", r.at.Sub(t0).Seconds(), r.event)
		case "failed":
			fmt.Fprintf(&b, "\n    +%6.3fs ACTION FAILED %s", r.at.Sub(t0).Seconds(), r.event)
		}
	}
	return b.String()
}

// benchLog receives the log of every operator a benchmark starts. The operator installs its
// logger process-wide (ctrl.SetLogger), and controller-runtime keeps the first one it is
// given: the log output of every later operator in the same test process goes to the
// writer of the first. So there is one tap for the process, installed by the first
// benchmark that starts an operator, and each benchmark filters it by namespace; a
// benchmark whose operator is not the process's first (a test ran one before it) gets its
// timings only if that test's operator was started by startTappedOperator too, and says so
// when it has none (tapWorks).
var benchLog = &benchLogWriter{tap: &opLogTap{}}

type benchLogWriter struct {
	tap *opLogTap
	mu  sync.Mutex
	f   *os.File // the current benchmark's copy of the log (nil: none)
}

func (w *benchLogWriter) Write(p []byte) (int, error) {
	_, _ = w.tap.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		_, _ = w.f.Write(p)
	}
	return len(p), nil
}

// startTappedOperator runs the operator in the test process (startOperator) with its log
// going to the suite's log and to benchLog, which keeps a copy in
// .cache/logs/<benchmark>.log (the suite's log is shared by every run of the suite and
// recreated by each).
func startTappedOperator(tb testing.TB, tweak ...func(*manager.Config)) (*operator, *opLogTap) {
	tb.Helper()
	if root, err := kubeassets.RepoRoot(); err == nil {
		path := filepath.Join(root, ".cache", "logs", strings.ReplaceAll(tb.Name(), "/", "-")+".log")
		if f, err := os.Create(path); err == nil {
			benchLog.mu.Lock()
			benchLog.f = f
			benchLog.mu.Unlock()
			tb.Cleanup(func() {
				benchLog.mu.Lock()
				benchLog.f = nil
				benchLog.mu.Unlock()
				_ = f.Close()
			})
			tb.Logf("operator log: %s", path)
		}
	}
	tweaks := append([]func(*manager.Config){func(c *manager.Config) { c.LogOutput = io.MultiWriter(operatorLog(), benchLog) }}, tweak...)
	return startOperator(tb, "", tweaks...), benchLog.tap
}

// tapWorks reports whether the tap has seen the operator's log of this cluster (call it once
// the cluster is Steady: its bootstrap transitions are logged by then).
func tapWorks(tb testing.TB, tap *opLogTap, ns, name string) bool {
	tb.Helper()
	if len(tap.since(ns, name, time.Time{})) > 0 {
		return true
	}
	tb.Logf("WARNING: the operator's log of %s/%s does not reach this benchmark (another operator installed the process-wide logger first); phase timings are missing", ns, name)
	return false
}

// ---- cluster helpers for testing.TB (the suite's take *testing.T) ------------------------

func waitVC(tb testing.TB, ns, name string, timeout time.Duration, what string, cond func(*v1alpha1.ValkeyCluster) bool) *v1alpha1.ValkeyCluster {
	tb.Helper()
	var last v1alpha1.ValkeyCluster
	ctx, cancel := context.WithTimeout(context.Background(), timeout+5*time.Second)
	defer cancel()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &last); err != nil {
			return false, nil
		}
		return cond(&last), nil
	})
	if err != nil {
		tb.Fatalf("%s/%s: %s: %v\n%s", ns, name, what, err, summary(&last))
	}
	return &last
}

// clientEndpoint is the client Service's address and the application password.
func clientEndpoint(tb testing.TB, vc *v1alpha1.ValkeyCluster) (string, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var svc corev1.Service
	if err := k.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: kube.NamesOf(valkeyapi.HubOf(vc)).Client}, &svc); err != nil {
		tb.Fatal(err)
	}
	var s corev1.Secret
	if err := k.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: kube.NamesOf(valkeyapi.HubOf(vc)).Auth}, &s); err != nil {
		tb.Fatal(err)
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, "6379"), string(s.Data[kube.KeyClientPassword])
}

// createReplication creates a Replication cluster of n pods and waits until it is Steady
// and takes writes through its client Service.
func createReplication(tb testing.TB, ns, name string, n int32, mutate ...func(*v1alpha1.ValkeyCluster)) *v1alpha1.ValkeyCluster {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	vc := newCluster(ns, name, v1alpha1.TopologyReplication, n)
	for _, f := range mutate {
		f(vc)
	}
	if err := k.Create(ctx, vc); err != nil {
		tb.Fatal(err)
	}
	vc = waitVC(tb, ns, name, 3*time.Minute, "Steady", steadyWith(int(n)))
	waitServiceWritable(tb, vc, 30*time.Second)
	return vc
}

// waitServiceWritable waits until a SET through the client Service succeeds.
func waitServiceWritable(tb testing.TB, vc *v1alpha1.ValkeyCluster, timeout time.Duration) {
	tb.Helper()
	addr, pass := clientEndpoint(tb, vc)
	dial := serviceDialer(addr, pass, time.Second)
	deadline := time.Now().Add(timeout)
	for {
		c, err := dial()
		if err == nil {
			_, err = c.Do(time.Second, "SET", "bench-probe", "1")
			_ = c.Close()
			if err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no write through the client Service %s within %s: %v\n%s", addr, timeout, err, summary(vc))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pluginForBench builds kubectl-valkey into a directory of the benchmark's own.
func pluginForBench(tb testing.TB) string {
	tb.Helper()
	root, err := kubeassets.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(tb.TempDir(), "kubectl-valkey")
	cmd := exec.Command("go", "build", "-o", bin, "./plugin")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building kubectl-valkey: %v\n%s", err, out)
	}
	return bin
}

func runPlugin(tb testing.TB, bin string, args ...string) {
	tb.Helper()
	out, err := exec.Command(bin, append(args, "--kubeconfig", cl.KubeconfigPath())...).CombinedOutput()
	if err != nil {
		tb.Fatalf("kubectl valkey %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// loadAvg is the machine's load (1, 5, 15 min) from /proc/loadavg, logged with the figures:
// the machine is shared and the figures move with it.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// readyForRun waits, before each benchmark run, for the cluster to be Steady with 3 ready pods
// and writable through its client Service, and returns it with that Service's address and the
// client password.
func readyForRun(b testing.TB, ns, name string) (*v1alpha1.ValkeyCluster, string, string) {
	b.Helper()
	vc := waitVC(b, ns, name, 3*time.Minute, "Steady with 3 ready before the run", steadyWith(3))
	waitServiceWritable(b, vc, 30*time.Second)
	addr, pass := clientEndpoint(b, vc)
	return vc, addr, pass
}
