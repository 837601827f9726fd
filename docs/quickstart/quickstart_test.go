// Package quickstart runs the README's quick start and docs/getting-started.md as written: the
// shell blocks a page marks for running, with the real helm, kubectl and kubectl-valkey,
// against a local cluster that runs the operator's image built from this tree.
package quickstart

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

var cl *localcluster.Cluster

func TestMain(m *testing.M) {
	root, err := kubeassets.RepoRoot()
	if err == nil {
		// The chart's pod runs the image as make image builds it, under the name the chart
		// pulls (ghcr.io/valkey-fsm/valkey-operator:<appVersion>), as a release's would.
		var layout string
		if layout, err = localcluster.BuildOperatorImage(root); err == nil {
			os.Exit(localcluster.RunTests(m, "docs-quickstart", localcluster.Options{OperatorLayout: layout}, &cl))
		}
	}
	fmt.Fprintln(os.Stderr, "docs/quickstart:", err)
	os.Exit(1)
}

// A page marks what a reader runs, in order: `<!-- test: run -->` before a ```sh block runs
// it; `<!-- test: file NAME -->` before a fenced block saves it as NAME (the manifest a later
// block applies, as the page tells the reader to save it). Unmarked blocks are not run: the
// plugin's install from krew (this tree's plugin is on PATH instead), a port-forward.
const (
	markRun  = "<!-- test: run -->"
	markFile = "<!-- test: file "
)

type step struct {
	line int    // of the block's fence
	file string // save the block as this file; empty: run it
	body string
}

// steps reads a page's marked blocks.
func steps(t *testing.T, page string) []step {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []step
	var pending *step
	var block *step
	var body strings.Builder
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case block != nil && trimmed == "```":
			block.body = body.String()
			out = append(out, *block)
			block = nil
		case block != nil:
			body.WriteString(line + "\n")
		case trimmed == markRun:
			pending = &step{}
		case strings.HasPrefix(trimmed, markFile):
			pending = &step{file: strings.TrimSuffix(strings.TrimPrefix(trimmed, markFile), " -->")}
		case pending != nil && strings.HasPrefix(trimmed, "```"):
			if pending.file == "" && trimmed != "```sh" {
				t.Fatalf("%s:%d: a block marked to run is not ```sh", page, n)
			}
			block, pending = pending, nil
			block.line = n
			body.Reset()
		case pending != nil && trimmed != "":
			t.Fatalf("%s:%d: a test mark not followed by a fenced block", page, n)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// chartRefs map the release's OCI charts to this tree's: the quick start installs what the
// release publishes, which is this tree's chart (its default image is the one the local
// cluster runs from the build above). `helm` on the steps' PATH rewrites the reference and
// drops a `--version` (a chart from a directory has the version of its Chart.yaml).
var chartRefs = map[string]string{
	"oci://ghcr.io/valkey-fsm/charts/valkey-operator": "charts/valkey-operator",
	"oci://ghcr.io/valkey-fsm/charts/valkey-cluster":  "charts/valkey-cluster",
}

// toolsDir is a directory for the steps' PATH: kubectl (the control plane's), helm (the
// project's pinned one behind the chart mapping) and kubectl-valkey built from this tree.
func toolsDir(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	kubectl, err := localcluster.KubectlPath()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(kubectl, filepath.Join(dir, "kubectl")); err != nil {
		t.Fatal(err)
	}
	var helm strings.Builder
	helm.WriteString("#!/usr/bin/env bash\n# helm with the release's OCI charts mapped to this tree's (docs/quickstart).\nargs=()\nwhile [ $# -gt 0 ]; do\n  case \"$1\" in\n    --version) shift 2; continue ;;\n    --version=*) shift; continue ;;\n")
	for ref, path := range chartRefs {
		fmt.Fprintf(&helm, "    %s) args+=(%q); shift; continue ;;\n", ref, filepath.Join(root, path))
	}
	fmt.Fprintf(&helm, "  esac\n  args+=(\"$1\"); shift\ndone\nexec %q \"${args[@]}\"\n", filepath.Join(root, "hack", "helm.sh"))
	if err := os.WriteFile(filepath.Join(dir, "helm"), []byte(helm.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-valkey"), "./plugin")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-valkey: %v\n%s", err, out)
	}
	return dir
}

// runPage runs a page's marked steps in a fresh directory, as a reader in a shell would (bash,
// stopping at the first failing command), and fails naming the block that failed. Once the
// operator's chart is installed, its journal and webhook Services are pointed at the
// operator's pod: the local cluster's pods have no endpoints a selector Service could list
// (a real cluster needs nothing of the kind).
func runPage(t *testing.T, page string) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	root, err := kubeassets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, page)
	todo := steps(t, path)
	if len(todo) < 2 {
		t.Fatalf("%s: %d marked blocks: the marks are gone", page, len(todo))
	}
	tools := toolsDir(t, root)
	work := t.TempDir()
	env := append(os.Environ(), "KUBECONFIG="+cl.KubeconfigPath(), "PATH="+tools+":"+os.Getenv("PATH"),
		"HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	t.Cleanup(func() { uninstall(t, env, work) })
	pointed := false
	for _, s := range todo {
		if s.file != "" {
			if err := os.WriteFile(filepath.Join(work, s.file), []byte(s.body), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		out, err := shell(ctx, env, work, s.body)
		t.Logf("%s:%d:\n%s\n%s", page, s.line, s.body, out)
		if err != nil {
			t.Fatalf("%s:%d: the block fails as written: %v\n%s\n%s", page, s.line, err, s.body, out)
		}
		if !pointed && strings.Contains(s.body, "helm install valkey-operator") {
			pctx, pcancel := context.WithTimeout(ctx, time.Minute)
			for _, svc := range []string{"valkey-operator-journal", "valkey-operator-webhook"} {
				if err := cl.PointServiceAtPod(pctx, "valkey-operator-system", svc, nil); err != nil {
					t.Fatalf("pointing %s at the operator's pod: %v", svc, err)
				}
			}
			pcancel()
			pointed = true
		}
	}
}

// shell runs a block with bash -euo pipefail in dir; the block's processes are killed with it.
func shell(ctx context.Context, env []string, dir, body string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", body)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// uninstall leaves the local cluster as the next page needs it: no cluster, no operator.
func uninstall(t *testing.T, env []string, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, cmd := range []string{
		"kubectl delete valkeycluster --all --wait --timeout=2m --ignore-not-found",
		"helm uninstall valkey-operator -n valkey-operator-system --wait --timeout 2m --ignore-not-found",
		"kubectl delete crd valkeyclusters.valkey.fsm.dev valkeybackups.valkey.fsm.dev valkeyacls.valkey.fsm.dev --ignore-not-found --wait --timeout=2m",
	} {
		if out, err := shell(ctx, env, dir, cmd); err != nil {
			t.Logf("cleaning up (%s): %v\n%s", cmd, err, out)
		}
	}
}

// TestTheReadmeQuickStartRunsAsWritten installs the operator and a first cluster exactly as
// the README says, and looks at it with the plugin.
func TestTheReadmeQuickStartRunsAsWritten(t *testing.T) { runPage(t, "README.md") }

// TestGettingStartedRunsAsWritten: install, a first cluster, connect, a switchover, the
// history and the clean-up, exactly as docs/getting-started.md says.
func TestGettingStartedRunsAsWritten(t *testing.T) { runPage(t, "docs/getting-started.md") }
