package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheWorkflowsLint: the forge's workflows cannot run here, so actionlint (hack/actionlint.sh,
// what make lint-workflows runs) checks them: they pass, and the same linter fails a copy of
// the release workflow with a misspelt action input, so a pass means something. The release
// workflow publishes under the names the docs and the chart use.
func TestTheWorkflowsLint(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	actionlint := toolPath(t, root, "actionlint.sh")
	cmd := exec.Command(actionlint, "-no-color")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("actionlint: %v\n%s", err, out)
	}
	release := string(readFile(t, filepath.Join(root, ".github", "workflows", "release.yml")))
	for _, want := range []string{"make release VERSION=", "IMAGE_PUSH=\"ghcr.io/valkey-fsm/valkey-operator:$VERSION\"", "CHART_PUSH=oci://ghcr.io/valkey-fsm/charts", "uses: ./.github/workflows/test.yml"} {
		if !strings.Contains(release, want) {
			t.Errorf("the release workflow does not say %s", want)
		}
	}

	broken := strings.Replace(release, "fail_on_unmatched_files:", "fail_on_unmatched_file:", 1)
	if broken == release {
		t.Fatal("the release workflow has no fail_on_unmatched_files to misspell")
	}
	dir := filepath.Join(t.TempDir(), ".github", "workflows")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "release.yml"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(actionlint, "-no-color", filepath.Join(dir, "release.yml")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "fail_on_unmatched_file") {
		t.Errorf("actionlint passed a release workflow with a misspelt input: %v\n%s", err, out)
	}
}
