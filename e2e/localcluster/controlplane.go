package localcluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// controllers are the kube-controller-manager controllers this world runs. The endpoint and
// endpointslice controllers are left out on purpose: the API server refuses loopback
// addresses in them, so the service proxy finds backends from Pods instead. Node lifecycle
// is left to the node agent, which marks a stopped Node and its Pods not ready itself.
var controllers = []string{
	"statefulset-controller", "job-controller", "cronjob-controller", "garbage-collector-controller",
	"replicaset-controller", "deployment-controller", "disruption-controller",
	"ttl-after-finished-controller", "persistentvolume-binder-controller",
	"persistentvolume-protection-controller", "persistentvolumeclaim-protection-controller",
	"namespace-controller", "serviceaccount-controller", "root-ca-certificate-publisher-controller",
	"pod-garbage-collector-controller", "clusterrole-aggregation-controller",
}

// controlPlane is etcd + kube-apiserver (run by envtest), kube-controller-manager and
// kube-scheduler, all in the cluster's directory.
type controlPlane struct {
	plane     *envtest.ControlPlane
	admin     *envtest.AuthenticatedUser
	kubecfg   string // admin kubeconfig file
	caFile    string
	auditLog  string // the API server's audit log (ServiceAccounts' requests)
	kubelet   *kubeletPKI
	procs     []*exec.Cmd
	procsDone []chan struct{}
}

func startControlPlane(ctx context.Context, binDir string, s slot, log io.Writer) (cp *controlPlane, err error) {
	cp = &controlPlane{}
	defer func() {
		if err != nil {
			cp.stop()
		}
	}()
	etcdDir := filepath.Join(s.dir, "etcd")
	certDir := filepath.Join(s.dir, "apiserver")
	for _, d := range []string{etcdDir, certDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	wrapped, err := wrapWithDeathSignal(s, binDir, "etcd", "kube-apiserver")
	if err != nil {
		return nil, err
	}
	// The API server listens on the host's address on the Pods' bridge (podnet.go), which
	// Pods reach from their own network namespaces (127.0.0.1 is their own there); envtest
	// puts the address in the serving certificate.
	apiPort, err := freePort(s.hostIP())
	if err != nil {
		return nil, err
	}
	api := &envtest.APIServer{
		Path:         wrapped["kube-apiserver"],
		CertDir:      certDir,
		StartTimeout: 90 * time.Second,
		StopTimeout:  20 * time.Second,
		Out:          prefixed(log, "kube-apiserver"),
		Err:          prefixed(log, "kube-apiserver"),
	}
	serving := &api.SecureServing
	serving.Address, serving.Port = s.hostIP().String(), strconv.Itoa(apiPort)
	auditPolicy, auditLog, err := writeAuditPolicy(certDir)
	if err != nil {
		return nil, err
	}
	cp.auditLog = auditLog
	frontProxy, err := frontProxyFiles(certDir)
	if err != nil {
		return nil, err
	}
	args := api.Configure()
	// The aggregation layer, as kubeadm sets it up: the operator serves its journal as an
	// aggregated API, which the API server reaches with this client certificate.
	for flag, value := range frontProxy {
		args.Set(flag, value)
	}
	// The node agent's kubelet API (logs, exec, port-forward): see kubeletpki.go.
	var kubeletFlags map[string]string
	if cp.kubelet, kubeletFlags, err = newKubeletPKI(certDir); err != nil {
		return nil, err
	}
	for flag, value := range kubeletFlags {
		args.Set(flag, value)
	}
	args.
		Set("audit-policy-file", auditPolicy).
		Set("audit-log-path", auditLog).
		Set("audit-log-format", "json").
		// One file for the whole run: a test reads every request since the start.
		Set("audit-log-maxsize", "0").
		Set("audit-log-mode", "blocking").
		Set("service-cluster-ip-range", s.serviceCIDR()).
		// envtest turns the ServiceAccount admission plugin off; Pods here get their
		// service-account token volume as in a real cluster.
		Disable("disable-admission-plugins").
		Set("enable-admission-plugins", "ServiceAccount").
		Set("advertise-address", s.hostIP().String()).
		// Its Endpoints would hold a loopback address, which the API server itself refuses;
		// the service proxy serves the kubernetes Service from the known address instead.
		Set("endpoint-reconciler-type", "none")
	cp.plane = &envtest.ControlPlane{
		APIServer: api,
		Etcd: &envtest.Etcd{
			Path:         wrapped["etcd"],
			DataDir:      etcdDir,
			StartTimeout: 60 * time.Second,
			StopTimeout:  20 * time.Second,
			Out:          prefixed(log, "etcd"),
			Err:          prefixed(log, "etcd"),
		},
	}
	if err := cp.plane.Start(); err != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver: %w", err)
	}
	cp.admin, err = cp.plane.AddUser(envtest.User{Name: "localcluster-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := cp.admin.KubeConfig()
	if err != nil {
		return nil, err
	}
	cp.kubecfg = filepath.Join(s.dir, "kubeconfig")
	if err := os.WriteFile(cp.kubecfg, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	cp.caFile = filepath.Join(s.dir, "ca.crt")
	if err := os.WriteFile(cp.caFile, api.CA, 0o644); err != nil {
		return nil, err
	}
	env := append(os.Environ(), envClusterDir+"="+s.dir)
	kcm := exec.Command(filepath.Join(binDir, "kube-controller-manager"),
		"--kubeconfig="+cp.kubecfg,
		"--authentication-kubeconfig="+cp.kubecfg,
		"--authorization-kubeconfig="+cp.kubecfg,
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers="+strings.Join(controllers, ","),
		"--root-ca-file="+cp.caFile,
		"--concurrent-statefulset-syncs=5",
		"--v=1",
	)
	sched := exec.Command(filepath.Join(binDir, "kube-scheduler"),
		"--kubeconfig="+cp.kubecfg,
		"--authentication-kubeconfig="+cp.kubecfg,
		"--authorization-kubeconfig="+cp.kubecfg,
		"--leader-elect=false",
		"--secure-port=0",
		"--v=1",
	)
	for name, cmd := range map[string]*exec.Cmd{"kube-controller-manager": kcm, "kube-scheduler": sched} {
		cmd.Env = env
		cmd.Stdout = prefixed(log, name)
		cmd.Stderr = prefixed(log, name)
		// If this process dies without Stop (a panic), the kernel ends the children too.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting %s: %w", name, err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		cp.procs = append(cp.procs, cmd)
		cp.procsDone = append(cp.procsDone, done)
	}
	return cp, nil
}

func (cp *controlPlane) restConfig() *rest.Config {
	cfg := rest.CopyConfig(cp.admin.Config())
	cfg.QPS, cfg.Burst = 200, 400
	return cfg
}

func (cp *controlPlane) apiServerHostPort() (string, string) {
	ss := cp.plane.APIServer.SecureServing
	return ss.Address, ss.Port
}

// wrapWithDeathSignal writes, for each binary, a script in the cluster's directory that
// execs it with a parent-death signal. envtest starts etcd and kube-apiserver without one,
// and they would outlive a test process that panics.
func wrapWithDeathSignal(s slot, binDir string, names ...string) (map[string]string, error) {
	dir := filepath.Join(s.dir, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range names {
		p := filepath.Join(dir, n)
		script := fmt.Sprintf("#!/bin/sh\nexec setpriv --pdeathsig KILL -- %q \"$@\"\n", filepath.Join(binDir, n))
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			return nil, err
		}
		out[n] = p
	}
	return out, nil
}

func (cp *controlPlane) stop() {
	for i, cmd := range cp.procs {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-cp.procsDone[i]:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-cp.procsDone[i]
		}
	}
	cp.procs = nil
	if cp.plane != nil {
		_ = cp.plane.Stop()
	}
}

// freePort finds a TCP port free on ip now (the kernel's choice for port 0).
func freePort(ip netip.Addr) (int, error) {
	l, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
