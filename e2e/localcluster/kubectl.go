package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// KubectlPath is the real kubectl, at the control plane's version, that hack/kube-binaries.sh
// builds beside the control-plane binaries.
func KubectlPath() (string, error) {
	dir, err := kubeassets.Dir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "kubectl")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no kubectl in %s (hack/kube-binaries.sh builds it; %s may name a directory without it): %w", dir, kubeassets.EnvDir, err)
	}
	return p, nil
}

// Kubectl prepares kubectl with the given arguments against this cluster as its admin (its
// discovery cache in the cluster's directory). The command and what it started are killed
// when ctx ends, and by Stop.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (*exec.Cmd, error) {
	p, err := KubectlPath()
	if err != nil {
		return nil, err
	}
	all := append([]string{"--kubeconfig", c.KubeconfigPath(), "--cache-dir", filepath.Join(c.slot.dir, "kubectl-cache")}, args...)
	cmd := exec.CommandContext(ctx, p, all...)
	cmd.Env = append(os.Environ(), envClusterDir+"="+c.slot.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	return cmd, nil
}
