package operatorsuite

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// gapRun is one planned or reactive operation under a writing client.
type gapRun struct {
	gap         time.Duration // longest time between consecutive acknowledged writes from the operation on
	quiet       time.Duration // the same before the operation: the client's own noise floor
	took        time.Duration // operation requested -> cluster Steady again
	lost, acked int
}

// BenchmarkPlannedSwitchoverAndRollingGap measures what clients see of the operations that
// move the primary role on purpose (issues 5 and 16): the longest write gap (time between two
// consecutive acknowledged writes of a client writing continuously through the client
// Service: plain SET, 100 ms per step, reconnecting) and the acknowledged writes lost, for
//
//   - switchover: `kubectl valkey failover` (planned hand-over to a caught-up replica);
//   - restart: `kubectl valkey restart` (rolling restart: replicas, hand-over, old primary);
//   - delete-pod: deleting the primary's pod (cl.DeletePod, kubectl delete pod's default
//     grace period): its preStop hook holds it while the operator hands over (primary-leaving);
//   - drain: `kubectl drain` of the primary's node (an eviction), the same way;
//   - the reference, measured in the same run: deleting the primary's pod with no grace period
//     (--grace-period=0 --force: no preStop hook, the process is killed), which the operator
//     handles as a lost primary: what a deletion cost before the hand-over.
//
// 5 runs of each, interleaved, on one cluster (Steady with 3 ready between runs). quiet is
// the same client's longest gap in the second before each operation.
func BenchmarkPlannedSwitchoverAndRollingGap(b *testing.B) {
	if cl == nil {
		b.Skip("no local cluster")
	}
	runs := benchRuns(5)
	plugin := pluginForBench(b)
	for i := 0; i < b.N; i++ {
		ns := cl.Namespace(b)
		_, tap := startTappedOperator(b)
		createReplication(b, ns, "gap", 3)
		tapWorks(b, tap, ns, "gap")
		results := map[string][]gapRun{}
		b.Logf("load average at the start: %s (%d CPUs)", loadAvg(), runtime.NumCPU())
		b.Cleanup(func() { b.Logf("load average at the end: %s", loadAvg()) })
		kinds := []string{"switchover", "restart", "delete-pod", "drain", "delete-pod-force"}
		if only := os.Getenv("VKFSM_BENCH_KINDS"); only != "" {
			// A subset, to look at one kind's runs (the ratios need delete-pod-force).
			kinds = strings.Split(only, ",")
		}
		for r := 0; r < runs; r++ {
			for _, kind := range kinds {
				results[kind] = append(results[kind], gapScenario(b, ns, "gap", tap, plugin, kind, r))
			}
		}
		p50s := map[string]time.Duration{}
		var quiet []time.Duration
		for _, kind := range kinds {
			var gaps, took []time.Duration
			lost := 0
			for _, g := range results[kind] {
				gaps = append(gaps, g.gap)
				took = append(took, g.took)
				quiet = append(quiet, g.quiet)
				lost += g.lost
			}
			p50s[kind] = pct(gaps, 0.5)
			b.ReportMetric(msecs(pct(gaps, 0.5)), kind+"-gap-p50-ms")
			b.ReportMetric(msecs(pct(gaps, 0.99)), kind+"-gap-p99-ms")
			b.ReportMetric(float64(lost), kind+"-lost-writes")
			b.ReportMetric(secs(pct(took, 0.5)), kind+"-done-p50-s")
			b.Logf("%s: %d runs, longest gap p50 %s p99 %s (all: %s), %d acknowledged writes lost, Steady again after p50 %s",
				kind, len(gaps), pct(gaps, 0.5).Round(time.Millisecond), pct(gaps, 0.99).Round(time.Millisecond), durs(gaps), lost, pct(took, 0.5).Round(time.Millisecond))
		}
		b.ReportMetric(msecs(pct(quiet, 0.5)), "quiet-gap-p50-ms")
		b.ReportMetric(msecs(pct(quiet, 0.99)), "quiet-gap-p99-ms")
		for _, kind := range kinds {
			if ref := p50s["delete-pod-force"]; ref > 0 && kind != "delete-pod-force" {
				b.ReportMetric(float64(p50s[kind])/float64(ref), kind+"/delete-pod-force-p50")
			}
		}
	}
}

// BenchmarkKilledPrimaryWriteGap measures the write gap a client sees through the client
// Service when the primary's process is SIGKILLed and its container restarts at once (issue 16:
// p99 <= 1 s over at least 20 kills, nothing lost). The tail used to come from a restart that
// beat the survey: the new process was only seen at the next probe, a second later; the
// operator now knows the old process is gone from the container's new ID (Pod.Restarted).
// VKFSM_BENCH_RUNS sets the number of kills (default 20).
func BenchmarkKilledPrimaryWriteGap(b *testing.B) {
	if cl == nil {
		b.Skip("no local cluster")
	}
	runs := benchRuns(20)
	for i := 0; i < b.N; i++ {
		ns := cl.Namespace(b)
		_, tap := startTappedOperator(b)
		createReplication(b, ns, "kill", 3)
		tapWorks(b, tap, ns, "kill")
		b.Logf("load average at the start: %s (%d CPUs)", loadAvg(), runtime.NumCPU())
		var gaps []time.Duration
		lost := 0
		for r := 0; r < runs; r++ {
			g := gapScenario(b, ns, "kill", tap, "", "kill", r)
			gaps = append(gaps, g.gap)
			lost += g.lost
		}
		b.ReportMetric(msecs(pct(gaps, 0.5)), "kill-gap-p50-ms")
		b.ReportMetric(msecs(pct(gaps, 0.99)), "kill-gap-p99-ms")
		b.ReportMetric(float64(lost), "kill-lost-writes")
		b.ReportMetric(float64(pct(gaps, 0.99))/float64(time.Second), "kill-gap-p99/goal-1s")
		b.Logf("kill: %d runs, longest gap p50 %s p99 %s (all: %s), %d acknowledged writes lost; load average at the end: %s",
			len(gaps), pct(gaps, 0.5).Round(time.Millisecond), pct(gaps, 0.99).Round(time.Millisecond), durs(gaps), lost, loadAvg())
	}
}

// gapScenario runs one operation of the given kind under a writing client.
func gapScenario(b testing.TB, ns, name string, tap *opLogTap, plugin, kind string, run int) gapRun {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	vc, addr, pass := readyForRun(b, ns, name)
	old := vc.Status.Primary
	before := podUIDsAndRevisions(b, ns)
	w := startLoadWriter(b, fmt.Sprintf("%s-%d-%d", kind, run, time.Now().UnixNano()), serviceDialer(addr, pass, benchOpTimeout))
	defer w.halt()
	w.waitFlowing(b, 100, 30*time.Second)
	time.Sleep(time.Second)

	t0 := time.Now()
	var done func(*v1alpha1.ValkeyCluster) bool
	switch kind {
	case "switchover":
		runPlugin(b, plugin, "failover", name, "-n", ns)
		done = func(vc *v1alpha1.ValkeyCluster) bool {
			return steadyWith(3)(vc) && vc.Status.Primary != old && vc.Annotations[v1beta1.AnnotationSwitchoverTo] == ""
		}
	case "restart":
		runPlugin(b, plugin, "restart", name, "-n", ns)
		done = func(vc *v1alpha1.ValkeyCluster) bool {
			if !steadyWith(3)(vc) {
				return false
			}
			after := podUIDsAndRevisions(b, ns)
			for pod, rev := range after {
				if rev == before[pod] {
					return false
				}
			}
			return len(after) == 3
		}
	case "drain":
		// kubectl drain of the primary's node (this cluster's pods only: the node may carry
		// other tests' pods): cordon, then an eviction through the PodDisruptionBudget.
		var pod corev1.Pod
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: old}, &pod); err != nil {
			b.Fatal(err)
		}
		node := pod.Spec.NodeName
		cmd, err := cl.Kubectl(ctx, "drain", node, "--pod-selector", kube.LabelCluster+"="+name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout", "2m")
		if err != nil {
			b.Fatal(err)
		}
		drained := make(chan error, 1)
		go func() {
			out, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("kubectl drain %s: %v\n%s", node, err, out)
			}
			drained <- err
		}()
		b.Cleanup(func() {
			if cmd, err := cl.Kubectl(context.Background(), "uncordon", node); err == nil {
				_ = cmd.Run()
			}
		})
		done = func(vc *v1alpha1.ValkeyCluster) bool {
			if !steadyWith(3)(vc) {
				return false
			}
			after := podUIDsAndRevisions(b, ns)
			return after[old] != "" && after[old] != before[old]
		}
		defer func() {
			if err := <-drained; err != nil {
				b.Error(err)
			}
			if cmd, err := cl.Kubectl(context.Background(), "uncordon", node); err == nil {
				_ = cmd.Run()
			}
		}()
	case "kill":
		// SIGKILL of the primary's container; the local cluster restarts it at once, as a
		// kubelet does a first crash: a failover (the restarted process comes back fenced).
		lastSeq := lastHistorySeq(vc)
		if err := cl.KillContainer(ns, old, "valkey"); err != nil {
			b.Fatal(err)
		}
		done = func(vc *v1alpha1.ValkeyCluster) bool {
			return recordedSince(vc, lastSeq, "failover-complete") && steadyWith(3)(vc)
		}
	case "delete-pod", "delete-pod-force":
		del := cl.DeletePod
		if kind == "delete-pod-force" {
			del = cl.ForceDeletePod
		}
		if err := del(ctx, ns, old); err != nil {
			b.Fatal(err)
		}
		done = func(vc *v1alpha1.ValkeyCluster) bool {
			if !steadyWith(3)(vc) {
				return false
			}
			after := podUIDsAndRevisions(b, ns)
			return after[old] != "" && after[old] != before[old]
		}
	}
	vc = waitVC(b, ns, name, 4*time.Minute, kind+" done and Steady with 3 ready", done)
	took := time.Since(t0)
	time.Sleep(500 * time.Millisecond)
	w.halt()
	stopped := time.Now()
	acks := w.snapshot()
	res := gapRun{took: took, acked: len(acks)}
	var quietAcks []ack
	for _, a := range acks {
		if a.end.Before(t0) && !a.end.Before(t0.Add(-time.Second)) {
			quietAcks = append(quietAcks, a)
		}
	}
	res.quiet, _ = longestGap(quietAcks, time.Time{})
	var gapAt time.Time
	res.gap, gapAt = gapSince(acks, t0, stopped)
	missing := missingKeys(b, serviceDialer(addr, pass, 2*time.Second), acks)
	res.lost = len(missing)
	b.Logf("%s run %d: primary %s -> %s: longest gap %s from +%.3fs to +%.3fs (quiet %s), lost %d/%d, Steady again after %s, writer: %s; operator log:%s",
		kind, run, old, vc.Status.Primary, res.gap.Round(time.Millisecond), gapAt.Sub(t0).Seconds(), gapAt.Add(res.gap).Sub(t0).Seconds(),
		res.quiet.Round(time.Millisecond), res.lost, res.acked, took.Round(time.Millisecond), w.status(), timeline(tap.since(ns, name, t0), t0)+lostTimes(missing, t0))
	return res
}

// podUIDsAndRevisions maps each pod (not being deleted) to its UID and revision: a pod
// restarted by the operator or re-created shows a different value.
func podUIDsAndRevisions(tb testing.TB, ns string) map[string]string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pods corev1.PodList
	if err := k.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = string(p.UID) + "/" + p.Annotations[kube.AnnotationRevision]
		}
	}
	return out
}
