package reconcile

import (
	"regexp"
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
