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
	"syscall"
	"time"

	"github.com/valkey-fsm/valkey-operator/e2e/kubeassets"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
)

func main() {
	nodes := flag.Int("nodes", 3, "how many Nodes to register")
	newIPs := flag.Bool("new-ip-on-recreate", false, "give re-created Pods a new IP, as real clusters do")
	verbose := flag.Bool("v", false, "print the control plane's and the pods' output")
	flag.Parse()
	if err := run(*nodes, *newIPs, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "dev-cluster:", err)
		os.Exit(1)
	}
}

func run(nodes int, newIPs, verbose bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var log io.Writer = io.Discard
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
	start := time.Now()
	fmt.Println("starting the local cluster (the first run builds the Kubernetes binaries: a few minutes)...")
	cl, err := localcluster.Start(ctx, localcluster.Options{Nodes: nodes, NewIPOnRecreate: newIPs, Log: log})
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
	fmt.Println("Ctrl-C stops it.")
	<-ctx.Done()
	return nil
}
