package operatorsuite

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

var (
	cl *localcluster.Cluster
	k  client.Client
	// operatorBinary is the operator's binary in its image, unpacked (for the tests that run it
	// as a process of their own).
	operatorBinary string
	// operatorLayout is the OCI layout of that image, for tests that start a local cluster of
	// their own.
	operatorLayout string
)

func TestMain(m *testing.M) {
	// The operator image runs from the OCI layout make image writes, built from this tree, for
	// the tests that run the operator as a Pod.
	layoutDir, err := buildOperatorImage()
	if err != nil {
		fmt.Fprintln(os.Stderr, "building the operator's image:", err)
		os.Exit(1)
	}
	os.Exit(localcluster.RunTests(m, "operatorsuite", localcluster.Options{OperatorLayout: layoutDir, AfterTests: checkOperatorRequests, ExecProbeMinPeriod: execProbeMinPeriod(), MaxPodsPerNode: envInt("VKFSM_BENCH_MAX_PODS_PER_NODE", 0)}, &cl, setUp))
}

func buildOperatorImage() (string, error) {
	root, err := kubeassets.RepoRoot()
	if err != nil {
		return "", err
	}
	start := time.Now()
	layoutDir, err := localcluster.BuildOperatorImage(root)
	if err != nil {
		return "", err
	}
	img, err := localcluster.LoadOCILayout(layoutDir)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "operatorsuite: operator image %s %s built and unpacked in %s\n", img.Name, img.Digest, time.Since(start).Round(time.Millisecond))
	operatorBinary = img.Path(img.Image.Entrypoint[0])
	operatorLayout = layoutDir
	return layoutDir, nil
}

// setUp installs the CRD from the chart, makes the typed client and the in-process
// operators' ServiceAccount.
func setUp(c *localcluster.Cluster) (err error) {
	if k, err = valkeyapi.Install(c); err != nil {
		return err
	}
	return setUpOperatorIdentity(c)
}

// operator is an operator running in the test process.
type operator struct {
	cancel  context.CancelFunc
	done    chan error
	journal string
	addr    string
}

// operatorLog is where in-process operators write their logs.
func operatorLog() io.Writer { return cl.Log("operator") }

// startOperator runs the operator in the test process until the test ends (or stop). Its
// logs go to the cluster's log with an [operator] prefix.
func startOperator(t testing.TB, journalPath string, tweak ...func(*manager.Config)) *operator {
	t.Helper()
	if journalPath == "" {
		journalPath = filepath.Join(t.TempDir(), "journal.db")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	o := &operator{cancel: cancel, done: make(chan error, 1), journal: journalPath, addr: addr}
	cfg := manager.Config{
		MetricsAddr: "0", ProbeAddr: "0", JournalAddr: addr, JournalPath: journalPath,
		LeaderElect: false, MaxConcurrentReconciles: 4, RetryInterval: time.Second,
		LogOutput: operatorLog(), SkipNameValidation: true,
	}
	for _, f := range tweak {
		f(&cfg)
	}
	go func() { o.done <- manager.Run(ctx, rest.CopyConfig(operatorConfig), cfg) }()
	t.Cleanup(func() { o.stop(t) })
	return o
}

// stop ends the operator at once, as a crash ends its work: whatever it was doing stops.
func (o *operator) stop(t testing.TB) {
	t.Helper()
	if o.cancel == nil {
		return
	}
	o.cancel()
	o.cancel = nil
	select {
	case err := <-o.done:
		if err != nil {
			t.Logf("operator stopped with: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the operator did not stop within 30s; goroutines of ours still running:\n%s", ourGoroutines())
	}
}

// ourGoroutines is the stacks of the test process's goroutines that run the operator's code
// (the whole dump goes to the operator's log): what kept an operator from stopping.
func ourGoroutines() string {
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	_, _ = fmt.Fprintf(operatorLog(), "goroutines at a stop that did not end:\n%s\n", buf)
	var ours []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "valkey-operator/operator/") || strings.Contains(g, "valkey-operator/actuators/") {
			ours = append(ours, g)
		}
	}
	return strings.Join(ours, "\n\n")
}

// execProbeMinPeriod stretches the pods' exec probes for benchmarks of many pods
// (VKFSM_BENCH_EXEC_PROBE_PERIOD_SECONDS; BenchmarkManyClusters at 1000 clusters): on 2 cores
// the valkey pods' readiness probes, a shell and valkey-cli every 2 s each, would otherwise
// take the machine. Unset, pods are probed as their spec says.
func execProbeMinPeriod() time.Duration {
	return time.Duration(envInt("VKFSM_BENCH_EXEC_PROBE_PERIOD_SECONDS", 0)) * time.Second
}
