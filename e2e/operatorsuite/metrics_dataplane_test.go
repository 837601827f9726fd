package operatorsuite

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
	"github.com/valkey-fsm/valkey-operator/internal/monitoring"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// scrape is one scrape of the operator's metrics: every sample by series name.
type scrape map[string][]*model.Sample

// scrapeMetrics reads and parses the operator's metrics with Prometheus's own text parser.
func scrapeMetrics(t *testing.T, addr, token string) scrape {
	t.Helper()
	body := scrapeAs(t, addr, token)
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the metrics do not parse: %v", err)
	}
	out := scrape{}
	for _, mf := range families {
		vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, mf)
		if err != nil {
			t.Fatal(err)
		}
		// By series name: a histogram's series are its _bucket, _sum and _count.
		for _, s := range vec {
			name := string(s.Metric[model.MetricNameLabel])
			out[name] = append(out[name], s)
		}
	}
	return out
}

// of is the samples of name whose labels include every pair in labels ("k", "v", ...).
func (s scrape) of(name string, labels ...string) []*model.Sample {
	var out []*model.Sample
	for _, smp := range s[name] {
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			ok = ok && string(smp.Metric[model.LabelName(labels[i])]) == labels[i+1]
		}
		if ok {
			out = append(out, smp)
		}
	}
	return out
}

// checkQueriedMetrics checks that every metric the chart's alerting rules and dashboard query,
// among those want selects, is in the scrape.
func checkQueriedMetrics(t *testing.T, s scrape, want func(string) bool) {
	t.Helper()
	root, err := kubeassets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	queried, err := monitoring.Queried(root)
	if err != nil {
		t.Fatal(err)
	}
	families := map[string]bool{}
	for name := range s {
		families[name] = true
	}
	checked := map[string][]string{}
	for name, where := range queried {
		if want(name) {
			checked[name] = where
		}
	}
	if missing := monitoring.Missing(checked, families); len(missing) > 0 {
		t.Errorf("queried by the chart's alerts or dashboard but not in the operator's scrape: %v", missing)
	}
	t.Logf("%d queried metric names found in the scrape", len(checked))
}

// metricsReaderRole may get /metrics (what the chart's metrics-reader ClusterRole grants).
const metricsReaderRole = "suite-metrics-reader"

// metricsOperator starts an operator serving its metrics over HTTPS and returns the address
// and a token allowed to read them.
func metricsOperator(t *testing.T, ns string) (addr, token string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	_ = ln.Close()
	startOperator(t, "", func(c *manager.Config) { c.MetricsAddr, c.MetricsSecure = addr, true })
	reader := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: metricsReaderRole},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	if _, err := cl.Clientset().RbacV1().ClusterRoles().Create(context.Background(), reader, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return addr, serviceAccountToken(t, ns, "prometheus", reader.Name)
}

// The data-plane metrics, scraped from the operator and parsed by Prometheus's own parser,
// follow the cluster: every pod up, the primary's keys and role, each replica's lag; a cluster
// costs a bounded number of series; when the primary's node stops, the stopped pod is
// valkey_up 0, the failover is counted with its duration, and the new primary is the one
// instance_info names; a deleted cluster leaves no series.
func TestDataPlaneMetricsFollowTheClusterThroughAFailover(t *testing.T) {
	ns := cl.Namespace(t)
	addr, token := metricsOperator(t, ns)
	ctx := ctxFor(t, 5*time.Minute)
	if err := k.Create(ctx, newCluster(ns, "observed", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "observed", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	c := writable(t, vc)
	if err := setAndWait(ctx, c, "observed:", 100, 2); err != nil {
		t.Fatal(err)
	}
	mine := []string{"namespace", ns, "cluster", "observed"}
	var s scrape
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		s = scrapeMetrics(t, addr, token)
		keys := s.of("valkey_db_keys", append(mine, "pod", vc.Status.Primary, "db", "db0")...)
		if len(s.of("valkey_up", mine...)) == 3 && len(keys) == 1 && keys[0].Value >= 100 && len(s.of("valkey_replica_lag_bytes", mine...)) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the metrics do not show the cluster: up %v, keys %v, lag %v", s.of("valkey_up", mine...), keys, s.of("valkey_replica_lag_bytes", mine...))
		}
	}
	for _, up := range s.of("valkey_up", mine...) {
		if up.Value != 1 {
			t.Errorf("%v", up)
		}
	}
	if p := s.of("valkey_instance_info", append(mine, "role", "primary")...); len(p) != 1 || string(p[0].Metric["pod"]) != vc.Status.Primary {
		t.Errorf("instance_info names primary %v, status %s", p, vc.Status.Primary)
	}
	if r := s.of("valkey_connected_replicas", append(mine, "pod", vc.Status.Primary)...); len(r) != 1 || r[0].Value != 2 {
		t.Errorf("connected replicas %v", r)
	}
	total := 0
	for name, samples := range s {
		if strings.HasPrefix(name, "valkey_operator_") {
			continue // the operator's per-cluster series carry the same labels: not the data plane's cost
		}
		for _, smp := range samples {
			if smp.Metric["cluster"] == "observed" && smp.Metric["namespace"] == model.LabelValue(ns) {
				total++
			}
		}
	}
	if total > 3*25 {
		t.Errorf("a 3-pod cluster costs %d data-plane series, want at most 75", total)
	}
	t.Logf("a 3-pod replication cluster with one database: %d data-plane series", total)

	oldPrimary := vc.Status.Primary
	pod, err := cl.Clientset().CoreV1().Pods(ns).Get(ctx, oldPrimary, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.StopNode(ctx, pod.Spec.NodeName); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.StartNode(context.Background(), pod.Spec.NodeName) })
	vc = waitFor(t, ns, "observed", 90*time.Second, "a new primary", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.State == v1alpha1.StateSteady && vc.Status.Primary != "" && vc.Status.Primary != oldPrimary
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		s = scrapeMetrics(t, addr, token)
		down := s.of("valkey_up", append(mine, "pod", oldPrimary)...)
		newP := s.of("valkey_instance_info", append(mine, "role", "primary")...)
		failovers := s.of("valkey_operator_failovers_total", "namespace", ns, "cluster", "observed")
		durations := s.of("valkey_operator_failover_duration_seconds_count", "namespace", ns, "cluster", "observed")
		if len(down) == 1 && down[0].Value == 0 && len(newP) == 1 && string(newP[0].Metric["pod"]) == vc.Status.Primary &&
			len(failovers) == 1 && failovers[0].Value == 1 && len(durations) == 1 && durations[0].Value == 1 {
			sum := s.of("valkey_operator_failover_duration_seconds_sum", "namespace", ns, "cluster", "observed")
			t.Logf("failover counted, %.2f s", sum[0].Value)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the failover: old primary up %v, primary %v, failovers %v, durations %v", down, newP, failovers, durations)
		}
	}
	// Every metric the chart's alerts and dashboard query is in this real scrape, but those
	// only some clusters have: checked where they exist (see checkQueriedMetrics' callers).
	checkQueriedMetrics(t, s, func(name string) bool {
		return !strings.HasPrefix(name, "valkey_cluster_") && !strings.HasPrefix(name, "valkey_aof_") &&
			!strings.HasPrefix(name, "valkey_operator_backup") && name != "valkey_operator_tls_certificate_expiry_timestamp_seconds" &&
			!strings.HasPrefix(name, "valkey_operator_sentinels")
	})
	if err := cl.StartNode(ctx, pod.Spec.NodeName); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(ctx, get(t, ns, "observed")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		s = scrapeMetrics(t, addr, token)
		if len(s.of("valkey_up", mine...)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a deleted cluster is still exported: %v", s.of("valkey_up", mine...))
		}
	}
}
