package monitoring

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// The chart's alerting rules pass promtool's checks, and its unit tests (files/alerts_test.yaml:
// each alert fires where it should and stays silent where it should not) pass under promtool,
// built from the Prometheus module (hack/promtool.sh).
func TestAlertRules(t *testing.T) {
	root, err := kubeassets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(root, "hack", "promtool.sh")).Output()
	if err != nil {
		t.Fatalf("building promtool (hack/promtool.sh): %v", err)
	}
	promtool := strings.TrimSpace(string(out))
	files := filepath.Join(root, filepath.Dir(AlertsFile))
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = files
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}
