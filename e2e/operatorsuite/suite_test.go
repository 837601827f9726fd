package operatorsuite

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
	// operatorBinary is the operator built from this tree (the image the chart's pod runs).
	operatorBinary string
)

func TestMain(m *testing.M) {
	// The operator image maps to a binary built from this tree, for the tests that run the
	// operator as a Pod.
	bin, err := buildOperator()
	if err != nil {
		fmt.Fprintln(os.Stderr, "building the operator:", err)
		os.Exit(1)
	}
	operatorBinary = bin
	os.Exit(localcluster.RunTests(m, "operatorsuite", localcluster.Options{OperatorBinary: bin, AfterTests: checkOperatorRequests}, &cl, setUp))
}

func buildOperator() (string, error) {
	root, err := kubeassets.RepoRoot()
	if err != nil {
		return "", err
	}
	// The chart runs the operator as a non-root user, which must be able to reach the binary.
	dir, err := localcluster.ProgramDir(root)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "valkey-operator")
	cmd := exec.Command("go", "build", "-o", bin, "./operator")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	return bin, nil
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
		t.Fatal("the operator did not stop within 30s")
	}
}
