package operatorsuite

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"github.com/valkey-fsm/valkey-operator/internal/resp"
)

// BenchmarkSentinelTopologyRTO measures the Sentinel topology as an application that asks the
// sentinels for the primary sees it (plain SET, 100 ms per step, reconnecting through a
// sentinel after any failure), against the Replication topology and bare valkey-sentinel in
// the same run, runs interleaved:
//
//   - node: the primary's node stopped (it comes back after the measurement). RTO is the fault
//     to the first write accepted afterwards. All three detect a lost primary in 5 s (the
//     shortest down-after the API accepts): the Sentinel topology's and bare valkey-sentinel's
//     down-after (3 servers, 3 sentinels, quorum 2, SIGKILL of the primary), and the
//     Replication topology's probe interval x failure threshold (1 s x 5).
//   - hand-over: `kubectl valkey failover` through the sentinels (SENTINEL FAILOVER after the
//     operator's hold-back and catch-up); the figure is the longest gap between two
//     acknowledged writes from the request on. The goal is p99 <= 250 ms.
//
// Every run counts the acknowledged writes lost (read back through the same kind of client).
// VKFSM_BENCH_RUNS sets the runs of each (default 3: a round takes about a minute).
func BenchmarkSentinelTopologyRTO(b *testing.B) {
	if cl == nil {
		b.Skip("no local cluster")
	}
	runs := benchRuns(3)
	const threshold = 5
	window := rtoProbeInterval * threshold
	plugin := pluginForBench(b)
	for i := 0; i < b.N; i++ {
		ns := cl.Namespace(b)
		_, tap := startTappedOperator(b)
		createReplication(b, ns, "rto", 3, func(vc *v1alpha1.ValkeyCluster) {
			vc.Spec.Failover = v1alpha1.FailoverSpec{ProbeIntervalSeconds: int32(rtoProbeInterval / time.Second), FailureThreshold: threshold}
		})
		createSentinelTopology(b, ns, "sent", window)
		b.Logf("load average at the start: %s (%d CPUs)", loadAvg(), runtime.NumCPU())
		b.Cleanup(func() { b.Logf("load average at the end: %s", loadAvg()) })
		var topo, repl, bare []rtoRun
		var handOvers []gapRun
		for r := 0; r < runs; r++ {
			topo = append(topo, sentinelTopologyNodeRun(b, ns, "sent", r))
			repl = append(repl, operatorRTORun(b, ns, "rto", tap, "node", r))
			sr := sentinelRun(b, window, fmt.Sprintf("sentinel-eq-%d", r))
			b.Logf("bare sentinel (down-after %s) run %d: RTO %s, lost %d/%d; %s", window, r, sr.rto.Round(time.Millisecond), sr.lost, sr.acked, sr.detail)
			bare = append(bare, sr)
			handOvers = append(handOvers, sentinelTopologyHandOver(b, ns, "sent", plugin, r))
		}
		report := func(label string, rs []rtoRun) time.Duration {
			rtos := rtosOf(rs)
			lost := 0
			for _, r := range rs {
				lost += r.lost
			}
			b.ReportMetric(secs(pct(rtos, 0.5)), label+"-rto-p50-s")
			b.ReportMetric(secs(pct(rtos, 0.99)), label+"-rto-p99-s")
			b.ReportMetric(float64(lost), label+"-lost-writes")
			b.Logf("%s: %d runs, RTO p50 %s p99 %s, all: %s; %d acknowledged writes lost", label, len(rs),
				pct(rtos, 0.5).Round(time.Millisecond), pct(rtos, 0.99).Round(time.Millisecond), durs(rtos), lost)
			return pct(rtos, 0.5)
		}
		t50 := report("sentinel-topology-node", topo)
		r50 := report("replication-node", repl)
		s50 := report("bare-sentinel", bare)
		b.ReportMetric(float64(t50)/float64(r50), "sentinel-topology/replication-p50")
		b.ReportMetric(float64(t50)/float64(s50), "sentinel-topology/bare-sentinel-p50")
		var gaps []time.Duration
		lost := 0
		for _, g := range handOvers {
			gaps = append(gaps, g.gap)
			lost += g.lost
		}
		b.ReportMetric(msecs(pct(gaps, 0.5)), "hand-over-gap-p50-ms")
		b.ReportMetric(msecs(pct(gaps, 0.99)), "hand-over-gap-p99-ms")
		b.ReportMetric(float64(lost), "hand-over-lost-writes")
		b.Logf("hand-over through the sentinels: %d runs, longest gap p50 %s p99 %s (all: %s), %d acknowledged writes lost",
			len(gaps), pct(gaps, 0.5).Round(time.Millisecond), pct(gaps, 0.99).Round(time.Millisecond), durs(gaps), lost)
	}
}

// createSentinelTopology creates a Sentinel topology of three data pods and three sentinels
// with down-after downAfter, and waits until it is Steady.
func createSentinelTopology(tb testing.TB, ns, name string, downAfter time.Duration) {
	tb.Helper()
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1beta1.ValkeyClusterSpec{
		Topology: v1beta1.TopologySentinel, Replicas: ptrTo(int32(2)),
		Sentinel: &v1beta1.SentinelSpec{Replicas: 3, DownAfter: &metav1.Duration{Duration: downAfter}, FailoverTimeout: &metav1.Duration{Duration: 20 * time.Second}},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.Create(ctx, vc); err != nil {
		tb.Fatal(err)
	}
	waitVC(tb, ns, name, 3*time.Minute, "Steady with 3 ready", steadyWith(3))
}

// sentinelTopologyDialer is an application's Sentinel client for the topology's sentinels:
// ask one (SENTINEL GET-MASTER-ADDR-BY-NAME, with the application password) where the primary
// is and connect there; after any failure ask the next sentinel.
func sentinelTopologyDialer(tb testing.TB, ns, name, pass string, timeout time.Duration) func() (*resp.Conn, error) {
	tb.Helper()
	var vc v1alpha1.ValkeyCluster
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vc); err != nil {
		tb.Fatal(err)
	}
	var pods corev1.PodList
	if err := k.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(kube.SentinelSelectorLabels(valkeyapi.HubOf(&vc)))); err != nil {
		tb.Fatal(err)
	}
	var sentinels []string
	for _, p := range pods.Items {
		if p.Status.PodIP != "" {
			sentinels = append(sentinels, net.JoinHostPort(p.Status.PodIP, fmt.Sprint(valkey.SentinelPort)))
		}
	}
	if len(sentinels) == 0 {
		tb.Fatalf("no sentinel pod of %s has an address", name)
	}
	var mu sync.Mutex
	next := 0
	return func() (*resp.Conn, error) {
		mu.Lock()
		addr := sentinels[next%len(sentinels)]
		next++
		mu.Unlock()
		sc, err := resp.Dial(addr, netip.Addr{}, "", pass, timeout)
		if err != nil {
			return nil, err
		}
		v, err := sc.Do(timeout, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", valkey.SentinelGroup)
		_ = sc.Close()
		if err != nil {
			return nil, err
		}
		a, ok := v.([]any)
		if !ok || len(a) != 2 {
			return nil, fmt.Errorf("sentinel %s: no primary: %v", addr, v)
		}
		host, _ := a[0].(string)
		port, _ := a[1].(string)
		return resp.Dial(net.JoinHostPort(host, port), netip.Addr{}, "", pass, timeout)
	}
}

// sentinelTopologyNodeRun is one unplanned failover of the Sentinel topology: the primary's
// node stopped under a writing Sentinel client; RTO to the first write accepted afterwards;
// the node started again once the sentinels' pick is recorded, and Steady with 3 ready.
func sentinelTopologyNodeRun(b *testing.B, ns, name string, run int) rtoRun {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	vc := waitVC(b, ns, name, 3*time.Minute, "Steady with 3 ready before the run", steadyWith(3))
	pass := password(b, vc)
	old, lastSeq := vc.Status.Primary, lastHistorySeq(vc)
	var pod corev1.Pod
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: old}, &pod); err != nil {
		b.Fatal(err)
	}
	dial := sentinelTopologyDialer(b, ns, name, pass, benchOpTimeout)
	w := startLoadWriter(b, fmt.Sprintf("sent-node-%d-%d", run, time.Now().UnixNano()), dial)
	defer w.halt()
	w.waitFlowing(b, 300, 30*time.Second)
	t0 := time.Now()
	if err := cl.StopNode(ctx, pod.Spec.NodeName); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cl.StartNode(context.Background(), pod.Spec.NodeName) })
	first := w.firstAckOn(b, time.Now(), 3*time.Minute)
	res := rtoRun{rto: first.end.Sub(t0), phases: map[string]time.Duration{}}
	waitVC(b, ns, name, 2*time.Minute, "the sentinels' pick recorded with the old primary's node down", func(vc *v1alpha1.ValkeyCluster) bool {
		return recordedSince(vc, lastSeq, "sentinel-promoted") && vc.Status.Primary != old
	})
	if err := cl.StartNode(ctx, pod.Spec.NodeName); err != nil {
		b.Fatal(err)
	}
	vc = waitVC(b, ns, name, 3*time.Minute, "Steady with 3 ready after the run", steadyWith(3))
	time.Sleep(300 * time.Millisecond)
	w.halt()
	acks := w.snapshot()
	res.acked = len(acks)
	missing := missingKeys(b, sentinelTopologyDialer(b, ns, name, pass, 2*time.Second), acks)
	res.lost = len(missing)
	b.Logf("sentinel topology node run %d: %s (node %s) -> %s: RTO %s, lost %d/%d, writer: %s%s",
		run, old, pod.Spec.NodeName, vc.Status.Primary, res.rto.Round(time.Millisecond), res.lost, res.acked, w.status(), lostTimes(missing, t0))
	return res
}

// sentinelTopologyHandOver is one `kubectl valkey failover` of the Sentinel topology under a
// writing Sentinel client: the longest gap between acknowledged writes from the request on.
func sentinelTopologyHandOver(b *testing.B, ns, name, plugin string, run int) gapRun {
	b.Helper()
	vc := waitVC(b, ns, name, 3*time.Minute, "Steady with 3 ready before the hand-over", steadyWith(3))
	pass := password(b, vc)
	old := vc.Status.Primary
	dial := sentinelTopologyDialer(b, ns, name, pass, benchOpTimeout)
	w := startLoadWriter(b, fmt.Sprintf("sent-hand-over-%d-%d", run, time.Now().UnixNano()), dial)
	defer w.halt()
	w.waitFlowing(b, 100, 30*time.Second)
	time.Sleep(time.Second)
	t0 := time.Now()
	runPlugin(b, plugin, "failover", name, "-n", ns)
	vc = waitVC(b, ns, name, 4*time.Minute, "the hand-over done and Steady with 3 ready", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(3)(vc) && vc.Status.Primary != old && vc.Annotations[v1beta1.AnnotationSwitchoverTo] == ""
	})
	took := time.Since(t0)
	time.Sleep(500 * time.Millisecond)
	w.halt()
	stopped := time.Now()
	acks := w.snapshot()
	res := gapRun{took: took, acked: len(acks)}
	var gapAt time.Time
	res.gap, gapAt = gapSince(acks, t0, stopped)
	missing := missingKeys(b, sentinelTopologyDialer(b, ns, name, pass, 2*time.Second), acks)
	res.lost = len(missing)
	b.Logf("sentinel topology hand-over run %d: %s -> %s: longest gap %s from +%.3fs, lost %d/%d, Steady again after %s, writer: %s%s",
		run, old, vc.Status.Primary, res.gap.Round(time.Millisecond), gapAt.Sub(t0).Seconds(), res.lost, res.acked, took.Round(time.Millisecond), w.status(), lostTimes(missing, t0))
	return res
}
