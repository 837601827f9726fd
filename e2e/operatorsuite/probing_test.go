package operatorsuite

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// metricValue sums the samples of the counter or histogram count of name whose labels include
// every pair in labels ("k", "v", ...), from the in-process operator's registry; bucket, if
// not zero, reads a histogram's cumulative count up to that bound instead.
func metricValue(t *testing.T, name string, bucket float64, labels ...string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !hasLabels(m, labels...) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Histogram != nil && bucket == 0:
				sum += float64(m.GetHistogram().GetSampleCount())
			case m.Histogram != nil:
				for _, b := range m.GetHistogram().GetBucket() {
					if b.GetUpperBound() == bucket {
						sum += float64(b.GetCumulativeCount())
					}
				}
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, labels ...string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
		}
		if !found {
			return false
		}
	}
	return true
}

// TestProbingKeepsItsCadenceWhileANodeDoesNotAnswer: probing runs apart from the reconcile
// workers. Two idle Standalone clusters are surveyed every second (probe interval 1 s) without
// a turn each second; then one cluster's node stops answering (blackholed: every survey waits
// for its timeout), and the other cluster's probes keep their cadence within ±10 %, as the
// probe-round histogram and the per-cluster probe counters show.
func TestProbingKeepsItsCadenceWhileANodeDoesNotAnswer(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	for _, name := range []string{"quiet", "dark"} {
		if err := k.Create(ctxFor(t, 10*time.Second), newCluster(ns, name, v1alpha1.TopologyStandalone, 1)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ns, "quiet", 2*time.Minute, "Steady", steadyWith(1))
	dark := waitFor(t, ns, "dark", 2*time.Minute, "Steady", steadyWith(1))
	time.Sleep(3 * time.Second) // the last reports land; both clusters idle

	const window = 8 * time.Second
	turns0 := metricValue(t, "valkey_operator_turns_total", 0, "namespace", ns)
	quiet0 := metricValue(t, "valkey_operator_probes_total", 0, "namespace", ns, "cluster", "quiet", "outcome", "answered")
	time.Sleep(window)
	turns := metricValue(t, "valkey_operator_turns_total", 0, "namespace", ns) - turns0
	quiet := metricValue(t, "valkey_operator_probes_total", 0, "namespace", ns, "cluster", "quiet", "outcome", "answered") - quiet0
	t.Logf("idle, %s: %.0f probes of quiet, %.0f turns of both clusters", window, quiet, turns)
	if quiet < 7 || quiet > 9 {
		t.Fatalf("quiet was probed %.0f times in %s at a 1 s interval, want 7-9", quiet, window)
	}
	// Before, every idle cluster had a turn every probe interval: 16 here.
	if turns > 4 {
		t.Fatalf("%.0f turns of two idle clusters in %s: probing should not need turns", turns, window)
	}

	if err := cl.IsolatePod(mustAddr(t, dark, "dark-0")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Heal() })
	time.Sleep(2 * time.Second) // rounds that started before the isolation end
	count0 := metricValue(t, "valkey_operator_probe_round_interval_ratio", 0)
	low0 := metricValue(t, "valkey_operator_probe_round_interval_ratio", 0.9)
	high0 := metricValue(t, "valkey_operator_probe_round_interval_ratio", 1.1)
	quiet0 = metricValue(t, "valkey_operator_probes_total", 0, "namespace", ns, "cluster", "quiet", "outcome", "answered")
	failed0 := metricValue(t, "valkey_operator_probes_total", 0, "namespace", ns, "cluster", "dark", "outcome", "failed")
	time.Sleep(window)
	rounds := metricValue(t, "valkey_operator_probe_round_interval_ratio", 0) - count0
	onTime := (metricValue(t, "valkey_operator_probe_round_interval_ratio", 1.1) - high0) - (metricValue(t, "valkey_operator_probe_round_interval_ratio", 0.9) - low0)
	quiet = metricValue(t, "valkey_operator_probes_total", 0, "namespace", ns, "cluster", "quiet", "outcome", "answered") - quiet0
	failed := metricValue(t, "valkey_operator_probes_total", 0, "namespace", ns, "cluster", "dark", "outcome", "failed") - failed0
	t.Logf("dark-0 blackholed, %s: %.0f probes of quiet, %.0f failed probes of dark, %.0f of %.0f rounds within ±10%% of the interval", window, quiet, failed, onTime, rounds)
	if failed < 5 {
		t.Fatalf("dark's node failed %.0f probes in %s: it should be probed, and fail, about every second", failed, window)
	}
	if quiet < 7 || quiet > 9 {
		t.Fatalf("quiet was probed %.0f times in %s while dark-0 does not answer, want 7-9: another cluster's timeouts delay its probes", quiet, window)
	}
	if rounds < 12 || onTime < 0.9*rounds {
		t.Fatalf("%.0f of %.0f probe rounds started within ±10%% of the interval, want at least 90%% (of about 16)", onTime, rounds)
	}
}
