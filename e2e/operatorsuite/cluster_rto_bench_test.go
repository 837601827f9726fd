package operatorsuite

// BenchmarkClusterShardFailoverRTO: the recovery time of one shard of a Cluster topology whose
// primary is lost, failed over by the operator's machine (docs/cluster.md: Valkey's own
// replica failover is off), next to Valkey's own gossip failover of the same loss in a plain
// cluster of processes, at a node timeout equal to the operator's detection window.

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/internal/resp"
)

// BenchmarkClusterShardFailoverRTO: a Cluster of 3 shards of 3 pods (with 2, a shard that fails
// over keeps no replica, and the Durable fence, min-replicas-to-write 1, refuses writes until
// one is back: availability waits for the lost node, by design); a client writes keys of
// one slot of shard 0 (plain SET, every step bounded by 100 ms, reconnecting after any failure:
// on each connection it asks a seed node for CLUSTER NODES and dials the primary serving that
// slot, as a minimal cluster client does); shard 0's primary is lost; RTO = fault to the first
// write accepted afterwards. Two faults on the operator's cluster, interleaved with the
// reference:
//
//   - kill: SIGKILL of the primary's container; the local cluster restarts it at once, as
//     kubelet would (it comes back fenced, with a new run id, and the machine fails over);
//   - node: the primary's node stopped (other pods there stop too) until the failover is
//     recorded.
//
// The reference: nine valkey-server processes (3 primaries, 6 replicas, formed by valkey-cli
// --cluster create) with cluster-node-timeout equal to the operator's detection window (probe
// interval × failure threshold = 3 s), replica failover on (Valkey's default), the same
// client, SIGKILL of the slot's primary, which stays dead. Ratios are ours / gossip.
func BenchmarkClusterShardFailoverRTO(b *testing.B) {
	if cl == nil {
		b.Skip("no local cluster")
	}
	runs := benchRuns(5)
	window := rtoProbeInterval * rtoFailureThreshold
	for i := 0; i < b.N; i++ {
		ns := cl.Namespace(b)
		_, tap := startTappedOperator(b)
		createShards(b, ns, "crto", 3, 3, func(vc *v1alpha1.ValkeyCluster) {
			vc.Spec.Failover = v1alpha1.FailoverSpec{ProbeIntervalSeconds: int32(rtoProbeInterval / time.Second), FailureThreshold: rtoFailureThreshold}
		})
		tapWorks(b, tap, ns, "crto")
		b.Logf("load average at the start: %s (%d CPUs)", loadAvg(), runtime.NumCPU())
		var kill, node, gossip []rtoRun
		for r := 0; r < runs; r++ {
			kill = append(kill, operatorShardRTORun(b, ns, "crto", tap, "kill", r))
			node = append(node, operatorShardRTORun(b, ns, "crto", tap, "node", r))
			gossip = append(gossip, gossipRTORun(b, window, r))
		}
		b.Logf("load average at the end: %s", loadAvg())
		report := func(label string, rs []rtoRun, phases ...string) (p50, p99 time.Duration) {
			rtos := rtosOf(rs)
			p50, p99 = pct(rtos, 0.5), pct(rtos, 0.99)
			b.ReportMetric(secs(p50), label+"-rto-p50-s")
			b.ReportMetric(secs(p99), label+"-rto-p99-s")
			lost := 0
			for _, r := range rs {
				lost += r.lost
			}
			b.ReportMetric(float64(lost), label+"-lost-writes")
			for _, ph := range phases {
				var ds []time.Duration
				for _, r := range rs {
					if d, ok := r.phases[ph]; ok {
						ds = append(ds, d)
					}
				}
				if len(ds) > 0 {
					b.ReportMetric(secs(pct(ds, 0.5)), fmt.Sprintf("%s-%s-p50-s", label, ph))
				}
			}
			b.Logf("%s: %d runs, RTO p50 %s p99 %s, all: %s", label, len(rs), p50.Round(time.Millisecond), p99.Round(time.Millisecond), durs(rtos))
			return p50, p99
		}
		gLabel := fmt.Sprintf("gossip-%gs", window.Seconds())
		k50, k99 := report("kill", kill, "primary-lost", "failover-complete")
		n50, n99 := report("node", node, "primary-lost", "failover-complete")
		g50, g99 := report(gLabel, gossip)
		b.ReportMetric(float64(k50)/float64(g50), "kill/"+gLabel+"-p50")
		b.ReportMetric(float64(k99)/float64(g99), "kill/"+gLabel+"-p99")
		b.ReportMetric(float64(n50)/float64(g50), "node/"+gLabel+"-p50")
		b.ReportMetric(float64(n99)/float64(g99), "node/"+gLabel+"-p99")
	}
}

// createShards creates a Cluster of shards shards of pods pods and waits until it is Steady
// with every slot served.
func createShards(tb testing.TB, ns, name string, shards, pods int32, mutate ...func(*v1alpha1.ValkeyCluster)) *v1alpha1.ValkeyCluster {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	vc := newCluster(ns, name, v1alpha1.TopologyCluster, pods)
	vc.Spec.Shards = shards
	for _, f := range mutate {
		f(vc)
	}
	if err := k.Create(ctx, vc); err != nil {
		tb.Fatal(err)
	}
	return waitVC(tb, ns, name, 4*time.Minute, "Steady", steadyCluster(int(shards), int(pods)))
}

// clusterDialer connects as a minimal cluster client does: it asks the seeds in turn for
// CLUSTER NODES and dials the primary that serves slot there (not one flagged failed), each
// step bounded by timeout.
func clusterDialer(seeds []string, pass string, slot int, timeout time.Duration) func() (*resp.Conn, error) {
	return func() (*resp.Conn, error) {
		var last error
		for _, seed := range seeds {
			addr, err := slotOwner(seed, pass, slot, timeout)
			if err != nil {
				last = err
				continue
			}
			return resp.Dial(addr, netip.Addr{}, "", pass, timeout)
		}
		return nil, fmt.Errorf("no seed names a primary for slot %d: %w", slot, last)
	}
}

// slotOwner asks seed which primary serves slot.
func slotOwner(seed, pass string, slot int, timeout time.Duration) (string, error) {
	c, err := resp.Dial(seed, netip.Addr{}, "", pass, timeout)
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	v, err := c.Do(timeout, "CLUSTER", "NODES")
	if err != nil {
		return "", err
	}
	text, _ := v.(string)
	view, err := valkey.ParseClusterNodes(text)
	if err != nil {
		return "", err
	}
	if owner, ok := view.OwnerOf(slot); ok {
		return net.JoinHostPort(owner.IP, strconv.Itoa(owner.Port)), nil
	}
	return "", fmt.Errorf("%s: no primary serves slot %d", seed, slot)
}

// tagIn finds a hash tag whose slot (CLUSTER KEYSLOT, asked at seed) is in [lo, hi].
func tagIn(tb testing.TB, seed, pass string, lo, hi int) (string, int) {
	tb.Helper()
	c, err := resp.Dial(seed, netip.Addr{}, "", pass, 2*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	for i := 0; i < 1000; i++ {
		tag := fmt.Sprintf("t%d", i)
		v, err := c.Do(2*time.Second, "CLUSTER", "KEYSLOT", tag)
		if err != nil {
			tb.Fatal(err)
		}
		if s := int(v.(int64)); s >= lo && s <= hi {
			return tag, s
		}
	}
	tb.Fatalf("no tag in slots %d-%d", lo, hi)
	return "", 0
}

// operatorShardRTORun is one lost primary of shard 0 of the operator's cluster: wait for
// Steady, start the client, inject the fault, time the first write accepted afterwards, bring
// everything back, count the acknowledged writes lost, time the operator's steps from its log.
func operatorShardRTORun(b *testing.B, ns, name string, tap *opLogTap, fault string, run int) rtoRun {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	vc := waitVC(b, ns, name, 3*time.Minute, "Steady before the run", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyCluster(3, 3)(vc) && vc.Status.Slots == "16384/16384"
	})
	_, pass := clientEndpoint(b, vc)
	var seeds []string
	for _, n := range vc.Status.Nodes {
		seeds = append(seeds, net.JoinHostPort(n.IP, "6379"))
	}
	lo, hi, _ := strings.Cut(strings.Split(vc.Status.Shards[0].Slots, ",")[0], "-")
	a, _ := strconv.Atoi(lo)
	z, _ := strconv.Atoi(hi)
	tag, slot := tagIn(b, seeds[0], pass, a, z)
	old := vc.Status.Shards[0].Primary
	lastSeq := lastHistorySeq(vc)
	pod, err := cl.Clientset().CoreV1().Pods(ns).Get(ctx, old, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	dial := clusterDialer(seeds, pass, slot, benchOpTimeout)
	w := startLoadWriter(b, fmt.Sprintf("{%s}-%s-%d-%d", tag, fault, run, time.Now().UnixNano()), dial)
	defer w.halt()
	w.waitFlowing(b, 300, 30*time.Second)

	t0 := time.Now()
	switch fault {
	case "kill":
		err = cl.KillContainer(ns, old, "valkey")
	case "node":
		err = cl.StopNode(ctx, pod.Spec.NodeName)
		b.Cleanup(func() { _ = cl.StartNode(context.Background(), pod.Spec.NodeName) })
	}
	if err != nil {
		b.Fatalf("%s %s: %v", fault, old, err)
	}
	t1 := time.Now()
	first := w.firstAckOn(b, t1, 3*time.Minute)
	res := rtoRun{rto: first.end.Sub(t0), phases: map[string]time.Duration{}}
	if fault == "node" {
		waitVC(b, ns, name, 2*time.Minute, "failover-complete recorded with the old primary's node down", func(vc *v1alpha1.ValkeyCluster) bool {
			return recordedSince(vc, lastSeq, "failover-complete")
		})
		if err := cl.StartNode(ctx, pod.Spec.NodeName); err != nil {
			b.Fatal(err)
		}
	}
	vc = waitVC(b, ns, name, 3*time.Minute, "Steady with every pod back after the run", func(vc *v1alpha1.ValkeyCluster) bool {
		return recordedSince(vc, lastSeq, "failover-complete") && steadyCluster(3, 3)(vc) && vc.Status.Slots == "16384/16384"
	})
	time.Sleep(300 * time.Millisecond)
	w.halt()
	acks := w.snapshot()
	res.acked = len(acks)
	missing := missingKeys(b, clusterDialer(seeds, pass, slot, 2*time.Second), acks)
	res.lost = len(missing)
	recs := tap.since(ns, name, t0)
	for _, ev := range []string{"primary-lost", "failover-complete"} {
		if at, ok := firstTransition(recs, ev); ok {
			res.phases[ev] = at.Sub(t0)
		}
	}
	b.Logf("operator %s run %d: %s (node %s) -> %s: RTO %s, lost %d/%d, writer: %s; operator log:%s",
		fault, run, old, pod.Spec.NodeName, vc.Status.Shards[0].Primary, res.rto.Round(time.Millisecond),
		res.lost, res.acked, w.status(), timeline(recs, t0)+lostTimes(missing, t0))
	return res
}

// gossipRTORun is one run of the reference: a fresh cluster of nine processes on loopback
// addresses of their own (127.241.0.0/24), Valkey's own failover at cluster-node-timeout
// nodeTimeout, SIGKILL of the primary serving the client's slot. Every process and directory
// goes with the run, also when it fails.
func gossipRTORun(b *testing.B, nodeTimeout time.Duration, run int) rtoRun {
	b.Helper()
	const pass = "bench-gossip"
	dir := b.TempDir()
	var procs []*vproc
	defer func() {
		for _, p := range procs {
			p.Kill()
		}
	}()
	var seeds []string
	for i := 0; i < 9; i++ {
		ip := fmt.Sprintf("127.241.0.%d", i+1)
		p := &vproc{Name: fmt.Sprintf("node-%d", i), IP: ip, Port: 6379, Dir: filepath.Join(dir, fmt.Sprintf("node-%d", i))}
		if err := os.MkdirAll(p.Dir, 0o755); err != nil {
			b.Fatal(err)
		}
		p.Start(b, "valkey-server", "--bind", ip, "--port", "6379", "--dir", p.Dir, "--logfile", logPath(p),
			"--save", "", "--appendonly", "no", "--protected-mode", "no",
			"--requirepass", pass, "--masterauth", pass,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(int(nodeTimeout/time.Millisecond)),
			"--cluster-announce-ip", ip, "--cluster-allow-replica-migration", "no",
			"--repl-diskless-sync-delay", "0")
		procs = append(procs, p)
		seeds = append(seeds, p.Addr())
	}
	for _, s := range seeds {
		waitAuthRESP(b, s, pass, 10*time.Second, "PING")
	}
	create := exec.Command("valkey-cli", append(append([]string{"--no-auth-warning", "--cluster", "create"}, seeds...), "--cluster-replicas", "2", "--cluster-yes")...)
	create.Env = append(os.Environ(), "REDISCLI_AUTH="+pass)
	if out, err := create.CombinedOutput(); err != nil {
		b.Fatalf("valkey-cli --cluster create: %v\n%s", err, out)
	}
	var why string
	ready := func() bool {
		for _, s := range seeds {
			info := authFields(s, pass, "CLUSTER", "INFO")
			if info["cluster_state"] != "ok" || info["cluster_known_nodes"] != "9" {
				why = fmt.Sprintf("%s: cluster_state %q, %q nodes known", s, info["cluster_state"], info["cluster_known_nodes"])
				return false
			}
			repl := authFields(s, pass, "INFO", "replication")
			if repl["role"] == "slave" && repl["master_link_status"] != "up" {
				why = fmt.Sprintf("%s: replica link %q", s, repl["master_link_status"])
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(30 * time.Second); !ready(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("the reference cluster is not ready within 30 s: %s", why)
		}
	}
	tag, slot := tagIn(b, seeds[0], pass, 0, 5460)
	owner, err := slotOwner(seeds[0], pass, slot, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	dial := clusterDialer(seeds, pass, slot, benchOpTimeout)
	w := startLoadWriter(b, fmt.Sprintf("{%s}-gossip-%d", tag, run), dial)
	defer w.halt()
	w.waitFlowing(b, 300, 30*time.Second)
	var victim *vproc
	for _, p := range procs {
		if p.Addr() == owner {
			victim = p
		}
	}
	if victim == nil {
		b.Fatalf("no process at %s", owner)
	}
	// Both replicas of the victim must have caught up with the writes so far (a replica can say
	// link up before its first offset arrives: seen once, and the election then picked it and
	// lost 308 writes, a fault of the harness, not of Valkey).
	at, _ := strconv.ParseInt(authFields(owner, pass, "INFO", "replication")["master_repl_offset"], 10, 64)
	waitUntil(b, 10*time.Second, "the victim's replicas caught up", func() bool {
		caught := 0
		for _, s := range seeds {
			r := authFields(s, pass, "INFO", "replication")
			off, _ := strconv.ParseInt(r["master_repl_offset"], 10, 64)
			if r["master_host"]+":6379" == owner && r["master_link_status"] == "up" && off >= at {
				caught++
			}
		}
		return caught == 2
	})
	t0 := time.Now()
	victim.Kill()
	t1 := time.Now()
	first := w.firstAckOn(b, t1, 2*time.Minute)
	res := rtoRun{rto: first.end.Sub(t0), phases: map[string]time.Duration{}}
	time.Sleep(300 * time.Millisecond)
	w.halt()
	acks := w.snapshot()
	res.acked = len(acks)
	var alive []string
	for _, s := range seeds {
		if s != owner {
			alive = append(alive, s)
		}
	}
	missing := missingKeys(b, clusterDialer(alive, pass, slot, 2*time.Second), acks)
	res.lost = len(missing)
	b.Logf("gossip (node timeout %s) run %d: %s killed: RTO %s, lost %d/%d, writer: %s%s", nodeTimeout, run, owner, res.rto.Round(time.Millisecond), res.lost, res.acked, w.status(), lostTimes(missing, t0))
	return res
}

// waitAuthRESP waits until a command succeeds at addr with the default user's password.
func waitAuthRESP(tb testing.TB, addr, pass string, timeout time.Duration, args ...string) {
	tb.Helper()
	waitUntil(tb, timeout, addr+" answers "+args[0], func() bool {
		c, err := resp.Dial(addr, netip.Addr{}, "", pass, time.Second)
		if err != nil {
			return false
		}
		defer func() { _ = c.Close() }()
		_, err = c.Do(time.Second, args...)
		return err == nil
	})
}

// authFields are the "field:value" lines of a command's reply (INFO, CLUSTER INFO) at addr,
// with the default user's password; empty when it does not answer.
func authFields(addr, pass string, args ...string) map[string]string {
	out := map[string]string{}
	c, err := resp.Dial(addr, netip.Addr{}, "", pass, time.Second)
	if err != nil {
		return out
	}
	defer func() { _ = c.Close() }()
	v, err := c.Do(time.Second, args...)
	if err != nil {
		return out
	}
	text, _ := v.(string)
	for _, line := range strings.Split(text, "\r\n") {
		if k, val, ok := strings.Cut(line, ":"); ok {
			out[k] = val
		}
	}
	return out
}
