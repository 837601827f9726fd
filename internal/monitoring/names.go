package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// metricName matches the operator's metric names in a PromQL expression.
var metricName = regexp.MustCompile(`\bvalkey_[a-z_]+\b`)

// Files are the chart's monitoring files, relative to the repository root.
const (
	AlertsFile    = "charts/valkey-operator/files/alerts.yaml"
	DashboardFile = "charts/valkey-operator/files/dashboard.json"
)

// Queried returns every metric name the alerting rules and the dashboard query, with where
// each is used ("alert X", "panel Y").
func Queried(root string) (map[string][]string, error) {
	out := map[string][]string{}
	add := func(expr, where string) {
		for _, n := range metricName.FindAllString(expr, -1) {
			out[n] = append(out[n], where)
		}
	}
	data, err := os.ReadFile(filepath.Join(root, AlertsFile))
	if err != nil {
		return nil, err
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		return nil, fmt.Errorf("%s: %w", AlertsFile, err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			add(r.Expr, "alert "+r.Alert)
		}
	}
	data, err = os.ReadFile(filepath.Join(root, DashboardFile))
	if err != nil {
		return nil, err
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		return nil, fmt.Errorf("%s: %w", DashboardFile, err)
	}
	for _, p := range dash.Panels {
		for _, t := range p.Targets {
			add(t.Expr, "panel "+p.Title)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok {
			add(q, "variable "+v.Name)
		}
	}
	return out, nil
}

// Family is the metric family a queried series name belongs to: a histogram's _bucket,
// _sum and _count series are of the family without the suffix, when that family exists.
func Family(name string, families map[string]bool) string {
	if families[name] {
		return name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && families[base] {
			return base
		}
	}
	return name
}

// Missing lists the queried names whose family is not in families, with where they are used.
func Missing(queried map[string][]string, families map[string]bool) []string {
	var out []string
	for n, where := range queried {
		if !families[Family(n, families)] {
			out = append(out, fmt.Sprintf("%s (%s)", n, strings.Join(where, ", ")))
		}
	}
	sort.Strings(out)
	return out
}
