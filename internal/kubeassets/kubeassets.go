// Package kubeassets finds (and builds once, when missing) the etcd and Kubernetes
// control-plane binaries that the local cluster and the envtest-based suites run. It lives in
// internal/ rather than e2e/ because tests of apis/ and plugin/ need it too, and nothing may
// import e2e.
package kubeassets

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// EnvDir names an environment variable that points at a directory holding etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler; it skips the build.
const EnvDir = "LOCALCLUSTER_BIN_DIR"

var (
	once   sync.Once
	dir    string
	dirErr error
)

// Dir returns the directory with the binaries, building them through
// hack/kube-binaries.sh the first time (minutes) and re-using the cache afterwards.
func Dir() (string, error) {
	once.Do(func() { dir, dirErr = find() })
	return dir, dirErr
}

func find() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "hack", "kube-binaries.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building Kubernetes binaries with hack/kube-binaries.sh: %w\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// RepoRoot walks up from the working directory to the directory holding the project's go.mod.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil &&
			bytes.Contains(data, []byte("module github.com/valkey-fsm/valkey-operator\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of github.com/valkey-fsm/valkey-operator above %s", wd)
		}
	}
}
