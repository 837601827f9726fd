package shared

import (
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
	"github.com/valkey-fsm/valkey-operator/internal/monitoring"
)

// Every metric the chart's alerting rules and dashboard query is one the operator registers
// (a renamed metric fails here, not silently in a user's Grafana). That the names also appear
// in a real scrape is TestDataPlaneMetricsFollowTheClusterThroughAFailover's part.
func TestAlertsAndDashboardQueryOnlyMetricsTheOperatorRegisters(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	ch := make(chan *prometheus.Desc, 256)
	go func() {
		reg.Describe(ch)
		close(ch)
	}()
	families := map[string]bool{}
	for d := range ch {
		families[descName(d)] = true
	}
	root, err := kubeassets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	queried, err := monitoring.Queried(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(queried) < 20 {
		t.Fatalf("only %d metric names queried: the files were not read as expected", len(queried))
	}
	if missing := monitoring.Missing(queried, families); len(missing) > 0 {
		t.Errorf("queried but not registered by the operator: %v", missing)
	}
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// descName is a description's metric name (Desc has no accessor; its String says it).
func descName(d *prometheus.Desc) string {
	if m := fqName.FindStringSubmatch(d.String()); m != nil {
		return m[1]
	}
	return ""
}

var variableLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)

// TestEveryPerClusterSeriesNamesTheClusterAlike: the operator's series and the data-plane
// series name a cluster with the same two labels, namespace and cluster, so that a dashboard
// or an alert joins them with on (namespace, cluster) and no label_replace. A series with a
// namespace label and no cluster label, or with a name label, is a join that fails silently.
func TestEveryPerClusterSeriesNamesTheClusterAlike(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	ch := make(chan *prometheus.Desc, 256)
	go func() {
		reg.Describe(ch)
		close(ch)
	}()
	perCluster := 0
	for d := range ch {
		m := variableLabels.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the labels of %s", d)
		}
		labels := map[string]bool{}
		for _, l := range strings.Split(m[1], ",") {
			labels[strings.TrimSpace(l)] = true
		}
		if labels["name"] {
			t.Errorf("%s names its cluster with a name label: use cluster, as every other series does", descName(d))
		}
		if labels["namespace"] != labels["cluster"] {
			t.Errorf("%s has labels %s: a per-cluster series needs both namespace and cluster", descName(d), m[1])
		}
		if labels["cluster"] {
			perCluster++
		}
	}
	if perCluster < 30 {
		t.Fatalf("only %d per-cluster series described: the descriptions were not read as expected", perCluster)
	}
}
