// Command dev-cluster starts a local cluster (real control plane, pods as processes) and keeps
// it up until Ctrl-C, printing how to point kubectl at it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

func main() {
	nodes := flag.Int("nodes", 3, "how many Nodes to register")
	newIPs := flag.Bool("new-ip-on-recreate", false, "give re-created Pods a new IP, as real clusters do")
	verbose := flag.Bool("v", false, "print the control plane's and the pods' output")
	apply := flag.String("apply", "", "manifest files (comma-separated) to apply in the default namespace once the cluster is up")
	operator := flag.Bool("operator", false, "build the operator and install its Helm chart")
	waitFor := flag.String("wait", "", "a ValkeyCluster (default namespace) to wait for until Steady, then show with kubectl valkey")
	flag.Parse()
	if err := run(*nodes, *newIPs, *verbose, *apply, *operator, *waitFor); err != nil {
		fmt.Fprintln(os.Stderr, "dev-cluster:", err)
		os.Exit(1)
	}
}

func run(nodes int, newIPs, verbose bool, apply string, withOperator bool, waitFor string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := io.Discard // an io.Writer: the log file or stderr replace it below
	logPath := ""
	if verbose {
		log = os.Stderr
	} else if root, err := kubeassets.RepoRoot(); err == nil {
		logPath = filepath.Join(root, ".cache", "logs", "dev-cluster.log")
		_ = os.MkdirAll(filepath.Dir(logPath), 0o755)
		if f, err := os.Create(logPath); err == nil {
			defer func() { _ = f.Close() }()
			log = f
		}
	}
	root, err := kubeassets.RepoRoot()
	if err != nil {
		return err
	}
	operatorLayout, pluginBin := "", ""
	if withOperator {
		fmt.Println("building the valkey-operator image (make image, this machine's platform) and kubectl-valkey...")
		if operatorLayout, pluginBin, err = buildOperator(root); err != nil {
			return err
		}
	}
	start := time.Now()
	fmt.Println("starting the local cluster (the first run builds the Kubernetes binaries: a few minutes)...")
	cl, err := localcluster.Start(ctx, localcluster.Options{Nodes: nodes, NewIPOnRecreate: newIPs, Log: log, OperatorLayout: operatorLayout})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("\nstopping: every process, nftables table and directory of the cluster goes")
		if err := cl.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop:", err)
		}
	}()
	kubeconfig := cl.KubeconfigPath()
	stable := filepath.Join(os.TempDir(), "vkfsm-dev-cluster.kubeconfig")
	if data, err := os.ReadFile(kubeconfig); err == nil && os.WriteFile(stable, data, 0o600) == nil {
		kubeconfig = stable
		defer func() { _ = os.Remove(stable) }()
	}
	fmt.Printf(`local cluster up in %s: %d nodes %v
  export KUBECONFIG=%s
  kubectl get nodes
Pods run as processes on loopback addresses; a Valkey pod answers at its pod IP:
  valkey-cli -h <status.podIP> ping
`, time.Since(start).Round(100*time.Millisecond), nodes, cl.NodeNames(), kubeconfig)
	if logPath != "" {
		fmt.Printf("log: %s\n", logPath)
	}
	if withOperator {
		if err := installOperator(root, kubeconfig); err != nil {
			return err
		}
		// kubectl valkey history --full reads the journal through the API server, which
		// reaches the operator through the chart's journal Service; and the API server
		// converts v1alpha1 (the samples) through the chart's webhook Service (one replica's
		// pod: a selector Service has no loopback endpoints here).
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := cl.PointServiceAtPod(pctx, "valkey-operator-system", "valkey-operator-journal", nil)
		if err == nil {
			err = cl.PointServiceAtPod(pctx, "valkey-operator-system", "valkey-operator-webhook", nil)
		}
		cancel()
		if err != nil {
			return err
		}
	}
	for _, file := range strings.Split(apply, ",") {
		if file == "" {
			continue
		}
		if waitFor != "" {
			if _, err := cl.ApplyFile(ctx, file, "default"); err != nil {
				return err
			}
			fmt.Printf("\napplied %s\n", file)
		} else if err := applyAndWait(ctx, cl, file); err != nil {
			return err
		}
	}
	if waitFor != "" {
		fmt.Printf("waiting for ValkeyCluster %s to be Steady...\n", waitFor)
	}
	if waitFor != "" {
		if err := waitSteady(ctx, cl, "default", waitFor); err != nil {
			return err
		}
		if pluginBin != "" {
			showPlugin(pluginBin, kubeconfig, "default", waitFor)
		}
		fmt.Printf("\nTry it:\n  export KUBECONFIG=%s PATH=%s:$PATH\n  kubectl get vkc\n  kubectl valkey history %s --watch\n%s\n%s",
			kubeconfig, filepath.Dir(pluginBin), waitFor, clientHint(ctx, cl, "default", waitFor), backupHint(ctx, cl, "default", waitFor))
	}
	fmt.Println("Ctrl-C stops it.")
	<-ctx.Done()
	return nil
}

// applyAndWait applies a manifest, waits until every Pod in the default namespace is Ready,
// and prints them with the Services to connect to.
func applyAndWait(ctx context.Context, cl *localcluster.Cluster, path string) error {
	objs, err := cl.ApplyFile(ctx, path, "default")
	if err != nil {
		return err
	}
	fmt.Printf("\napplied %s (%d objects); waiting for its pods...\n", path, len(objs))
	cs := cl.Clientset()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if len(pods.Items) > 0 && ready == len(pods.Items) {
			fmt.Printf("%-12s %-8s %-16s %s\n", "POD", "NODE", "IP", "READY")
			for _, p := range pods.Items {
				fmt.Printf("%-12s %-8s %-16s %s\n", p.Name, p.Spec.NodeName, p.Status.PodIP, "true")
			}
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d pods ready after 3 minutes", ready, len(pods.Items))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	svcs, err := cs.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, s := range svcs.Items {
		if s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone && s.Name != "kubernetes" {
			fmt.Printf("service %s: valkey-cli -h %s -p %d\n", s.Name, s.Spec.ClusterIP, s.Spec.Ports[0].Port)
		}
	}
	return nil
}
