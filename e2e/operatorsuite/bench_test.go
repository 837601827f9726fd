package operatorsuite

import (
	"bufio"
	"context"
	"fmt"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// BenchmarkApplyToSteady measures a 3-pod Replication cluster from apply to Steady, against
// the reference measured in the same run: the same StatefulSet (as the operator builds it)
// applied directly, until its pods are Ready. The ratio is the operator's own overhead.
func BenchmarkApplyToSteady(b *testing.B) {
	if cl == nil {
		b.Skip("no local cluster")
	}
	var withOp, podsOnly []time.Duration
	for i := 0; i < b.N; i++ {
		ns := benchNamespace(b)
		op := startOperator(b, "")
		start := time.Now()
		if err := k.Create(context.Background(), newCluster(ns, "bench", v1alpha1.TopologyReplication, 3)); err != nil {
			b.Fatal(err)
		}
		pollUntil(b, 2*time.Minute, func() bool {
			var vc v1alpha1.ValkeyCluster
			return k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "bench"}, &vc) == nil && steadyWith(3)(&vc)
		})
		withOp = append(withOp, time.Since(start))
		op.stop(b)

		ns2 := benchNamespace(b)
		vc := newCluster(ns2, "ref", v1alpha1.TopologyReplication, 3)
		vc.UID = types.UID("bench-ref")
		v1alpha1.SetDefaults(&vc.Spec)
		d := kube.Build(valkeyapi.HubOf(vc), metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "bench-ref"})
		d.StatefulSet.OwnerReferences = nil
		d.Config.OwnerReferences = nil
		// The pods need their ConfigMap and auth Secret, as the operator would create them.
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, Name: kube.NamesOf(valkeyapi.HubOf(vc)).Auth}, StringData: map[string]string{
			kube.KeyOperatorPassword: "x", "auth.conf": "user operator on >x ~* &* +@all\n",
		}}
		for _, o := range []client.Object{sec, d.Config, d.Headless} {
			o.SetOwnerReferences(nil)
			if err := k.Create(context.Background(), o); err != nil {
				b.Fatal(err)
			}
		}
		start = time.Now()
		if err := k.Create(context.Background(), d.StatefulSet); err != nil {
			b.Fatal(err)
		}
		pollUntil(b, 2*time.Minute, func() bool {
			var sts appsv1.StatefulSet
			return k.Get(context.Background(), client.ObjectKey{Namespace: ns2, Name: "ref"}, &sts) == nil && sts.Status.ReadyReplicas == 3
		})
		podsOnly = append(podsOnly, time.Since(start))
	}
	m, r := median(withOp), median(podsOnly)
	b.ReportMetric(m.Seconds(), "apply-to-steady-s")
	b.ReportMetric(r.Seconds(), "ref-pods-ready-s")
	b.ReportMetric(float64(m)/float64(r), "steady/pods-ready")
}

// BenchmarkManyClusters runs the operator as a Pod (from the chart) with many Standalone
// clusters (VKFSM_BENCH_CLUSTERS, default 50; issue 16's goal is 1000): time for all to reach
// Steady, reconcile latency p50/p99 from the operator's own controller-runtime histogram, API
// writes per minute per idle cluster, the operator's resident memory against its own baseline
// with no cluster (measured in the same run), and the probe cadence: the share of probe rounds
// that started within ±10 % of the interval, idle and then with one cluster in twenty cut off
// (its node blackholed: every survey of it waits for its timeout), with the operator's CPU per
// survey. 1000 clusters on the local cluster's 3 Nodes need VKFSM_BENCH_MAX_PODS_PER_NODE=400
// (kubelet's 110 stops at 330 pods) and, on 2 cores, VKFSM_BENCH_EXEC_PROBE_PERIOD_SECONDS=30
// (the pods' readiness probes would otherwise be 1500 process starts a second).
func BenchmarkManyClusters(b *testing.B) {
	if cl == nil {
		b.Skip("no local cluster")
	}
	n := envInt("VKFSM_BENCH_CLUSTERS", 50)
	for i := 0; i < b.N; i++ {
		opIP, opPID := installBenchOperator(b, "pprof.enabled=true", "extraArgs={--pprof-bind-address=:8083}")
		token := serviceAccountToken(b, "vo-bench", "prometheus", "valkey-operator-metrics-reader")
		time.Sleep(2 * time.Second)
		baseRSS := rssBytes(b, opPID)
		baseHeap := liveHeap(b, opIP, "")
		ns := benchNamespace(b)
		start := time.Now()
		names := make([]string, n)
		for j := range names {
			names[j] = fmt.Sprintf("c%04d", j)
			if err := k.Create(context.Background(), newCluster(ns, names[j], v1alpha1.TopologyStandalone, 1)); err != nil {
				b.Fatal(err)
			}
		}
		waitAll(b, ns, names, time.Duration(5+n/20)*time.Minute, "Steady with 1 ready", steadyWith(1))
		allSteady := time.Since(start)
		var list v1alpha1.ValkeyClusterList
		if err := k.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		const idle = 30 * time.Second
		before := scrapeAs(b, opIP+":8080", token)
		cpu0 := cpuSeconds(b, opPID)
		time.Sleep(idle)
		after := scrapeAs(b, opIP+":8080", token)
		cpu := cpuSeconds(b, opPID) - cpu0
		writes := sumMetric(after, "valkey_operator_api_writes_total", ns) - sumMetric(before, "valkey_operator_api_writes_total", ns)
		probes := sumMetric(after, "valkey_operator_probes_total", ns) - sumMetric(before, "valkey_operator_probes_total", ns)
		onTime := cadenceOnTime(before, after)
		rss := rssBytes(b, opPID)
		heap := liveHeap(b, opIP, fmt.Sprintf("BenchmarkManyClusters-%d-heap.pb.gz", n))

		// One cluster in twenty loses its node to a blackhole.
		dead := 0
		for j := range list.Items {
			if j%20 != 0 {
				continue
			}
			for _, nd := range list.Items[j].Status.Nodes {
				if ip, err := netip.ParseAddr(nd.IP); err == nil {
					if err := cl.IsolatePod(ip); err != nil {
						b.Fatal(err)
					}
					dead++
				}
			}
		}
		time.Sleep(5 * time.Second)
		before = scrapeAs(b, opIP+":8080", token)
		time.Sleep(idle)
		after = scrapeAs(b, opIP+":8080", token)
		onTimeDead := cadenceOnTime(before, after)
		_ = cl.Heal()
		p50, p99 := histogramQuantiles(after, "controller_runtime_reconcile_time_seconds", `controller="valkeycluster"`)

		b.ReportMetric(float64(n), "clusters")
		b.ReportMetric(allSteady.Seconds(), "all-steady-s")
		b.ReportMetric(p50*1000, "reconcile-p50-ms")
		b.ReportMetric(p99*1000, "reconcile-p99-ms")
		b.ReportMetric(writes/float64(n)/idle.Minutes(), "idle-writes/min/cluster")
		b.ReportMetric(float64(rss)/(1<<20), "operator-rss-MiB")
		b.ReportMetric(float64(rss-baseRSS)/float64(n)/(1<<20), "MiB/cluster")
		b.ReportMetric(float64(rss)/float64(baseRSS), "rss/baseline")
		b.ReportMetric(float64(heap)/(1<<20), "live-heap-MiB")
		b.ReportMetric(float64(heap-baseHeap)/float64(n)/(1<<10), "live-heap-KiB/cluster")
		b.ReportMetric(probes/idle.Seconds(), "probes/s")
		b.ReportMetric(cpu/probes*1e6, "cpu-us/survey")
		b.ReportMetric(onTime*100, "cadence-within-10%-idle-%")
		b.ReportMetric(onTimeDead*100, "cadence-within-10%-dead-%")
		b.ReportMetric(float64(dead), "dead-nodes")
		b.ReportMetric(execProbeMinPeriod().Seconds(), "pod-exec-probe-min-period-s")
		helm(b, "uninstall", "valkey-operator", "--namespace", "vo-bench", "--wait")
		_ = cl.Clientset().CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	}
}

// cadenceOnTime is the share of the probe rounds between two scrapes that started within ±10 %
// of their interval (valkey_operator_probe_round_interval_ratio in (0.9, 1.1]).
func cadenceOnTime(before, after string) float64 {
	const name = "valkey_operator_probe_round_interval_ratio"
	d := func(le string) float64 { return bucketCount(after, name, le) - bucketCount(before, name, le) }
	total := d("+Inf")
	if total == 0 {
		return math.NaN()
	}
	return (d("1.1") - d("0.9")) / total
}

// bucketCount is a histogram's cumulative count up to le, summed over its series.
func bucketCount(text, name, le string) float64 {
	return sumSamples(text, name+"_bucket{", `le="`+le+`"`)
}

// cpuSeconds is the user and system CPU time the process has used (/proc/PID/stat).
func cpuSeconds(b *testing.B, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // clock ticks (USER_HZ)
}

func benchNamespace(b *testing.B) string {
	ns := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if _, err := cl.Clientset().CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cl.Clientset().CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	pollUntil(b, 30*time.Second, func() bool {
		_, err := cl.Clientset().CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil
	})
	return ns
}

func pollUntil(b *testing.B, timeout time.Duration, f func() bool) {
	b.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return f(), nil })
	if err != nil {
		b.Fatalf("timed out after %s", timeout)
	}
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// installBenchOperator installs the chart with one operator replica into vo-bench and returns
// its pod's IP and process (see operatorPod).
func installBenchOperator(b *testing.B, values ...string) (string, int) {
	b.Helper()
	args := []string{"install", "valkey-operator", "../../charts/valkey-operator", "--namespace", "vo-bench", "--create-namespace",
		"--set", "replicas=1", "--wait", "--timeout", "3m"}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	helm(b, args...)
	return operatorPod(b, "vo-bench")
}

// operatorPod finds the chart's operator pod: its IP (metrics on :8080) and the host PID of
// its process (resident memory).
func operatorPod(b *testing.B, ns string) (string, int) {
	b.Helper()
	pods, err := cl.Clientset().CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=valkey-operator"})
	if err != nil || len(pods.Items) != 1 {
		b.Fatalf("operator pod: %v (%d pods)", err, len(pods.Items))
	}
	p := pods.Items[0]
	pid, err := cl.ContainerPID(ns, p.Name, "operator")
	if err != nil {
		b.Fatal(err)
	}
	return p.Status.PodIP, pid
}

// liveHeap is the operator's live heap just after a collection (HeapAlloc of a heap profile
// taken with gc=1, from the chart's pprof endpoint, opened on every address of the pod for this read): the part of its memory that grows
// with what it holds, where RSS also counts garbage not yet collected and memory the runtime
// has not returned. With save, the profile (binary) is kept under .cache/logs for
// `go tool pprof -top`.
func liveHeap(b *testing.B, opIP, save string) int64 {
	b.Helper()
	get := func(query string) []byte {
		resp, err := http.Get("http://" + net.JoinHostPort(opIP, "8083") + "/debug/pprof/heap?gc=1" + query)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		data, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("heap profile: %v (HTTP %d)", err, resp.StatusCode)
		}
		return data
	}
	if save != "" {
		path := filepath.Join("..", "..", ".cache", "logs", save)
		if err := os.WriteFile(path, get(""), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Logf("heap profile: %s", path)
	}
	for _, line := range strings.Split(string(get("&debug=1")), "\n") {
		if rest, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			v, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return v
		}
	}
	b.Fatal("no HeapAlloc in the heap profile")
	return 0
}

func rssBytes(b *testing.B, pid int) int64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	b.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

// sumMetric adds up the samples of a counter whose labels mention namespace ns.
func sumMetric(text, name, ns string) float64 {
	return sumSamples(text, name+"{", `namespace="`+ns+`"`)
}

// sumSamples adds up the values of the lines of a scrape that start with series and contain
// label.
func sumSamples(text, series, label string) float64 {
	total := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, series) || !strings.Contains(line, label) {
			continue
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		total += v
	}
	return total
}

// histogramQuantiles estimates p50 and p99 of a Prometheus histogram (linear interpolation
// inside the bucket, as histogram_quantile does).
func histogramQuantiles(text, name, selector string) (float64, float64) {
	type bucket struct{ le, count float64 }
	var buckets []bucket
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"_bucket{") || !strings.Contains(line, selector) {
			continue
		}
		i := strings.Index(line, `le="`)
		j := strings.Index(line[i+4:], `"`)
		le, err := strconv.ParseFloat(line[i+4:i+4+j], 64)
		if err != nil {
			le = math.Inf(1)
		}
		f := strings.Fields(line)
		c, _ := strconv.ParseFloat(f[len(f)-1], 64)
		buckets = append(buckets, bucket{le, c})
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].le < buckets[j].le })
	q := func(p float64) float64 {
		if len(buckets) == 0 {
			return math.NaN()
		}
		total := buckets[len(buckets)-1].count
		rank := p * total
		prevLe, prevCount := 0.0, 0.0
		for _, bk := range buckets {
			if bk.count >= rank {
				if math.IsInf(bk.le, 1) {
					return prevLe
				}
				if bk.count == prevCount {
					return bk.le
				}
				return prevLe + (bk.le-prevLe)*(rank-prevCount)/(bk.count-prevCount)
			}
			prevLe, prevCount = bk.le, bk.count
		}
		return prevLe
	}
	return q(0.5), q(0.99)
}
