package provisioner

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// This package's API server allocates ClusterIPs from its own loopback range (no test here
// dials one, but nothing may ever use the default 10.0.0.0/24).
const serviceRange = "127.252.0.0/16"

// kcmControllers are the controllers of kube-controller-manager that the provisioner works
// with: the binder, and the two that remove the protection finalizers the API server puts on
// every claim and volume.
const kcmControllers = "persistentvolume-binder,pvc-protection,pv-protection"

// One API server, etcd and kube-controller-manager for the whole package: starting them
// takes seconds, and each test has its own namespace, StorageClass and root directory.
var shared struct {
	once   sync.Once
	env    *envtest.Environment
	kcm    *exec.Cmd
	kcmLog string
	cs     kubernetes.Interface
	err    error
	dir    string
}

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's logger; without one it prints a warning
	// with a stack trace instead.
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if code != 0 && shared.kcmLog != "" {
		printTail(shared.kcmLog, 40)
	}
	stopCluster()
	os.Exit(code)
}

// cluster starts the package's control plane on first use (building the binaries the first
// time on this machine) and returns a client of it.
func cluster(tb testing.TB) kubernetes.Interface {
	tb.Helper()
	shared.once.Do(func() {
		if shared.err = startCluster(); shared.err != nil {
			stopCluster()
		}
	})
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.cs
}

func startCluster() error {
	bin, err := kubeassets.Dir()
	if err != nil {
		return err
	}
	if shared.dir, err = os.MkdirTemp("", "provisioner-test-"); err != nil {
		return err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: bin}
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", serviceRange)
	cfg, err := env.Start()
	shared.env = env
	if err != nil {
		return fmt.Errorf("starting envtest: %w", err)
	}
	if shared.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}

	user, err := env.ControlPlane.AddUser(envtest.User{Name: "kcm", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	kcPath := filepath.Join(shared.dir, "kcm.kubeconfig")
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		return err
	}
	shared.kcmLog = filepath.Join(shared.dir, "kcm.log")
	logf, err := os.Create(shared.kcmLog)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig="+kcPath,
		"--controllers="+kcmControllers,
		"--leader-elect=false",
		"--secure-port=0",
		"--v=2",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Dies with the test binary even when a panic or -timeout skips TestMain's cleanup.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	shared.kcm = cmd
	return nil
}

func stopCluster() {
	if shared.kcm != nil {
		_ = shared.kcm.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = shared.kcm.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = shared.kcm.Process.Kill()
			<-done
		}
	}
	if shared.env != nil {
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
}

// printTail shows the end of kube-controller-manager's log for a failed run.
func printTail(path string, n int) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	fmt.Fprintf(os.Stderr, "--- last %d lines of kube-controller-manager's log:\n", len(lines))
	for _, l := range lines {
		fmt.Fprintln(os.Stderr, l)
	}
}
