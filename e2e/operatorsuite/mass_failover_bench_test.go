package operatorsuite

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/internal/resp"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// massPace: one write per 50 ms per cluster. A hundred writers at the single-cluster
// benchmark's pace (1 ms) would be 100k writes a second through the service proxy, which
// would take the 2-core machine away from the operator whose recovery they time; 50 ms still
// resolves each recovery to 50 ms.
const massPace = 50 * time.Millisecond

// BenchmarkMassFailover (issue 16, item 6): one node is lost that carries the primaries of
// many Replication clusters (VKFSM_BENCH_MASS_CLUSTERS, default 50; 3 pods each, one per
// node), and every cluster must fail over in parallel, none waiting behind another's
// timeouts. The issue asks for 100: on a 2-core machine 300 pods' readiness probes (an exec
// every 2 s each) starve everything, and the 100 clusters did not all bootstrap within 15
// minutes (docs/measurements.md). VKFSM_BENCH_WORKERS sets the operator's reconcile
// workers (default 4, the chart's). Each cluster has a client writing through its client Service (plain SET, 100 ms
// per step, one per massPace, reconnecting); a cluster's RTO is the time from the node's stop
// to its client's first write accepted on a connection made afterwards.
//
// The reference, measured first in the same run on the same operator: one Replication cluster
// alone, its primary's node stopped (operatorRTORun's "node" fault, VKFSM_BENCH_RUNS times,
// default 3). The goal: every cluster's RTO p99 ≤ 2× the single cluster's median. Acknowledged
// writes lost are counted per cluster (read back through the Service once all are Steady).
func BenchmarkMassFailover(b *testing.B) {
	if cl == nil {
		b.Skip("no local cluster")
	}
	n := envInt("VKFSM_BENCH_MASS_CLUSTERS", 50)
	spec := func(vc *v1alpha1.ValkeyCluster) {
		vc.Spec.Failover = v1alpha1.FailoverSpec{ProbeIntervalSeconds: int32(rtoProbeInterval / time.Second), FailureThreshold: rtoFailureThreshold}
	}
	for i := 0; i < b.N; i++ {
		ns := cl.Namespace(b)
		workers := envInt("VKFSM_BENCH_WORKERS", 4)
		_, tap := startTappedOperator(b, func(c *manager.Config) { c.MaxConcurrentReconciles = workers })
		b.Logf("%d reconcile workers", workers)
		b.Logf("load average at the start: %s (%d CPUs)", loadAvg(), runtime.NumCPU())
		createReplication(b, ns, "solo", 3, spec)
		tapWorks(b, tap, ns, "solo")
		var solo []rtoRun
		for r := 0; r < benchRuns(3); r++ {
			solo = append(solo, operatorRTORun(b, ns, "solo", tap, "node", r))
		}
		soloP50 := pct(rtosOf(solo), 0.5)
		deleteCluster(b, ns, "solo")

		names := make([]string, n)
		start := time.Now()
		for j := range names {
			names[j] = fmt.Sprintf("m%03d", j)
			vc := newCluster(ns, names[j], v1alpha1.TopologyReplication, 3)
			spec(vc)
			if err := k.Create(context.Background(), vc); err != nil {
				b.Fatal(err)
			}
		}
		waitAll(b, ns, names, time.Duration(5+n/10)*time.Minute, "Steady with 3 ready", steadyWith(3))
		b.Logf("%d clusters Steady in %s; load average %s", n, time.Since(start).Round(time.Second), loadAvg())
		target := cl.NodeNames()[0]
		affected := primariesOnto(b, ns, names, target)
		b.Logf("%d of %d primaries on %s; load average %s", len(affected), n, target, loadAvg())

		writers := make([]*loadWriter, len(affected))
		dials := make([]func() (*resp.Conn, error), len(affected))
		seqs := make([]int64, len(affected))
		for j, name := range affected {
			vc, addr, pass := readyForRun(b, ns, name)
			seqs[j] = lastHistorySeq(vc)
			dials[j] = serviceDialer(addr, pass, 2*time.Second)
			writers[j] = startPacedWriter(b, fmt.Sprintf("mass-%s-%d", name, time.Now().UnixNano()), serviceDialer(addr, pass, benchOpTimeout), massPace)
		}
		for _, w := range writers {
			w.waitFlowing(b, 20, time.Minute)
		}

		audit0, _ := cl.AuditEvents(operatorSAUser)
		cpu0, procs0 := machineCPU(), processCPU()
		stopProfile := startCPUProfile(b)
		t0 := time.Now()
		if err := cl.StopNode(context.Background(), target); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cl.StartNode(context.Background(), target) })
		// Writes count from the kill on (before it, the old primaries still answered); the
		// node's and Pods' status updates after it are not part of the fault. Measured from
		// when StopNode returned, the clients' RTO once included those updates: about 5
		// minutes with 100 clusters, while the API client was throttled (session 23).
		t1 := cl.NodeStoppedAt(target)
		b.Logf("node %s: containers killed %s after the stop began; StopNode returned after %s", target, t1.Sub(t0).Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
		rtos := make([]time.Duration, len(affected))
		for j, w := range writers {
			rtos[j] = w.firstAckOn(b, t1, 3*time.Minute).end.Sub(t0)
		}
		// How busy the machine was from the stop until every client wrote again: on 2 cores
		// a mass failover competes with the control plane, 200 replicas reconnecting and the
		// clients themselves (the operator runs in this process).
		busy := machineCPU().busySince(cpu0)
		stopProfile()
		shares, byName := cpuShares(procs0, processCPU())
		// Printed, not logged: a benchmark keeps 10 lines of its log, and the single-cluster
		// runs' operator logs take them.
		fmt.Printf("mass failover: machine CPU busy from the stop until every client wrote again: %.0f%% of %d cores; by process: %s\n", busy*100, runtime.NumCPU(), shares)
		b.ReportMetric(busy*100, "machine-cpu-busy-%")
		// The operator's requests from the stop until every client wrote again, as the API
		// server's audit log has them (its own account of the load the failovers put on it).
		if audit1, err := cl.AuditEvents(operatorSAUser); err == nil && len(audit1) >= len(audit0) {
			window := audit1[len(audit0):]
			fmt.Printf("mass failover: the operator's API requests in that time (audit log): %d, %.1f per cluster: %s\n",
				len(window), float64(len(window))/float64(len(affected)), requestSummary(window))
			b.ReportMetric(float64(len(window))/float64(len(affected)), "operator-api-requests-per-cluster")
		}
		b.ReportMetric(byName[selfComm()]*100, "test-process-cpu-share-%")
		// The node stays down until every cluster has recorded its failover on its own (a
		// process coming back would be evidence that cuts the fence wait short).
		for j, name := range affected {
			waitVC(b, ns, name, 3*time.Minute, "failover-complete recorded with the node down", func(vc *v1alpha1.ValkeyCluster) bool {
				return recordedSince(vc, seqs[j], "failover-complete")
			})
		}
		if err := cl.StartNode(context.Background(), target); err != nil {
			b.Fatal(err)
		}
		waitAll(b, ns, affected, 5*time.Minute, "Steady with 3 ready after the node came back", steadyWith(3))
		time.Sleep(300 * time.Millisecond)
		lost, acked := 0, 0
		var detected, completed []time.Duration
		for j, w := range writers {
			w.halt()
			acks := w.snapshot()
			acked += len(acks)
			lost += len(missingKeys(b, dials[j], acks))
			recs := tap.since(ns, affected[j], t0)
			if at, ok := firstTransition(recs, "primary-lost"); ok {
				detected = append(detected, at.Sub(t0))
			}
			if at, ok := firstTransition(recs, "failover-complete"); ok {
				completed = append(completed, at.Sub(t0))
			}
		}
		p50, p99 := pct(rtos, 0.5), pct(rtos, 0.99)
		b.Logf("single cluster, node stopped: %d runs, RTO %s", len(solo), durs(rtosOf(solo)))
		fmt.Printf("mass failover: %d clusters, one node stopped: RTO p50 %s p99 %s max %s; primary-lost p50 %s p99 %s; failover-complete p50 %s p99 %s; %d of %d acknowledged writes lost; load average %s\n",
			len(affected), p50.Round(time.Millisecond), p99.Round(time.Millisecond), maxDur(rtos).Round(time.Millisecond),
			pct(detected, 0.5).Round(time.Millisecond), pct(detected, 0.99).Round(time.Millisecond),
			pct(completed, 0.5).Round(time.Millisecond), pct(completed, 0.99).Round(time.Millisecond), lost, acked, loadAvg())
		b.ReportMetric(float64(len(affected)), "clusters")
		b.ReportMetric(float64(workers), "workers")
		b.ReportMetric(execProbeMinPeriod().Seconds(), "pod-exec-probe-min-period-s")
		b.ReportMetric(secs(soloP50), "single-rto-p50-s")
		b.ReportMetric(secs(p50), "mass-rto-p50-s")
		b.ReportMetric(secs(p99), "mass-rto-p99-s")
		b.ReportMetric(secs(maxDur(rtos)), "mass-rto-max-s")
		b.ReportMetric(float64(p99)/float64(soloP50), "mass-p99/single-p50")
		b.ReportMetric(secs(pct(detected, 0.99)), "mass-primary-lost-p99-s")
		b.ReportMetric(secs(pct(completed, 0.99)), "mass-failover-complete-p99-s")
		b.ReportMetric(float64(lost), "lost-writes")
		for _, name := range affected {
			deleteCluster(b, ns, name)
		}
	}
}

// waitAll waits until cond holds for every named cluster of ns, listing them (one request a
// poll, not one per cluster), and names the ones it did not hold for.
func waitAll(tb testing.TB, ns string, names []string, timeout time.Duration, what string, cond func(*v1alpha1.ValkeyCluster) bool) {
	tb.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	deadline := time.Now().Add(timeout)
	for {
		var list v1alpha1.ValkeyClusterList
		var missing []string
		if err := k.List(context.Background(), &list, client.InNamespace(ns)); err == nil {
			held := map[string]bool{}
			for i := range list.Items {
				if want[list.Items[i].Name] && cond(&list.Items[i]) {
					held[list.Items[i].Name] = true
				}
			}
			for _, n := range names {
				if !held[n] {
					missing = append(missing, n)
				}
			}
			if len(missing) == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			sort.Strings(missing)
			tb.Fatalf("%s: not within %s for %d of %d clusters: %s", what, timeout, len(missing), len(names), strings.Join(missing, " "))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// primariesOnto switches each cluster's primary over to its pod on node (a planned,
// lossless hand-over, as kubectl valkey failover --to asks for), and returns the clusters
// whose primary is on node afterwards.
func primariesOnto(tb testing.TB, ns string, names []string, node string) []string {
	tb.Helper()
	onNode := map[string]bool{}
	for pod, nd := range podsOn(tb, ns) {
		onNode[pod] = nd == node
	}
	var moved, affected []string
	for _, name := range names {
		var vc v1alpha1.ValkeyCluster
		if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &vc); err != nil {
			tb.Fatal(err)
		}
		if onNode[vc.Status.Primary] {
			affected = append(affected, name)
			continue
		}
		for o := 0; o < 3; o++ {
			pod := fmt.Sprintf("%s-%d", name, o)
			if !onNode[pod] {
				continue
			}
			patch := client.MergeFrom(vc.DeepCopy())
			if vc.Annotations == nil {
				vc.Annotations = map[string]string{}
			}
			vc.Annotations[v1beta1.AnnotationSwitchoverTo] = pod
			if err := k.Patch(context.Background(), &vc, patch); err != nil {
				tb.Fatal(err)
			}
			moved = append(moved, name)
			affected = append(affected, name)
			break
		}
	}
	waitAll(tb, ns, moved, 5*time.Minute, "switched over onto "+node, func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(3)(vc) && onNode[vc.Status.Primary] && vc.Annotations[v1beta1.AnnotationSwitchoverTo] == ""
	})
	return affected
}

// deleteCluster deletes a cluster and does not wait (its pods stop in the background).
func deleteCluster(tb testing.TB, ns, name string) {
	tb.Helper()
	vc := &v1alpha1.ValkeyCluster{}
	vc.Namespace, vc.Name = ns, name
	if err := k.Delete(context.Background(), vc); err != nil {
		tb.Logf("deleting %s/%s: %v", ns, name, err)
	}
}

func maxDur(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// cpuTimes is the machine's CPU time so far (/proc/stat, in clock ticks): busy and total.
type cpuTimes struct{ busy, total float64 }

func machineCPU() cpuTimes {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	var t cpuTimes
	for i, v := range f[1:] {
		x, _ := strconv.ParseFloat(v, 64)
		t.total += x
		if i != 3 && i != 4 { // idle, iowait
			t.busy += x
		}
	}
	return t
}

// busySince is the busy fraction of the CPU time since t0.
func (t cpuTimes) busySince(t0 cpuTimes) float64 {
	if t.total <= t0.total {
		return 0
	}
	return (t.busy - t0.busy) / (t.total - t0.total)
}

// startCPUProfile profiles this process (the operator, the harness and the clients) into the
// file VKFSM_BENCH_CPUPROFILE names, if any, until the returned function is called.
func startCPUProfile(tb testing.TB) func() {
	path := os.Getenv("VKFSM_BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		tb.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
		tb.Logf("CPU profile of the test process written to %s", path)
	}
}

// requestSummary counts audit events by verb and resource, most frequent first.
func requestSummary(events []localcluster.AuditEvent) string {
	used := map[string]int{}
	for _, e := range events {
		if e.ObjectRef != nil {
			used[e.Verb+" "+e.Resource()]++
		}
	}
	keys := make([]string, 0, len(used))
	for k := range used {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return used[keys[i]] > used[keys[j]] || (used[keys[i]] == used[keys[j]] && keys[i] < keys[j])
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, used[k])
	}
	return strings.Join(parts, ", ")
}
