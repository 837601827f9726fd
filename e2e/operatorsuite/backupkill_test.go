package operatorsuite

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// TestAnOperatorSIGKILLedMidBackupLeavesItsUploadToTheNext: the operator runs as a process of its
// own (the binary the chart's pod runs, with the in-process operators' ServiceAccount token) and
// is SIGKILLed while a backup streams. Unlike an operator that stops, it cannot abort its
// multipart upload: the upload is seen in the store after the kill. The next operator finds the
// attempt interrupted (Failed, with the reason and an Event), aborts the upload left behind
// (AbortStale, scoped to the cluster's directory) and completes the backup on a later attempt;
// no multipart upload is left and the cluster served writes throughout.
func TestAnOperatorSIGKILLedMidBackupLeavesItsUploadToTheNext(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 5*time.Minute)
	spec, store := s3Store(t, ctx, ns)
	proc := exec.Command(operatorBinary, "run", "--leader-elect=false", "--metrics-bind-address=0",
		"--health-probe-bind-address=0", "--journal-bind-address=", "--journal-path=", "--source-ip=", "--webhook-bind-address=",
		"--watch-namespace="+ns, "--backup-backoff=2s", "--backup-attempts=10")
	proc.Env = append(os.Environ(), "KUBECONFIG="+kubeconfigFor(t, operatorConfig), "POD_IP=")
	proc.Stdout, proc.Stderr = operatorLog(), operatorLog()
	proc.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = proc.Process.Kill()
			_ = proc.Wait()
		}
	})
	vc := backedUpCluster(t, ctx, ns, "slow", 2, spec, func(vc *v1alpha1.ValkeyCluster) {
		// 3 ms per key while a snapshot is written: 3,000 keys stream for about 9 s.
		vc.Spec.Config = map[string]v1alpha1.ConfigValue{"rdb-key-save-delay": "3000"}
	})
	c := writable(t, vc)
	// 24 MB of random values: more than one 16 MiB part, so the upload is a multipart one,
	// begun about two thirds into the stream.
	value := make([]byte, 8192)
	cmds := make(vk.Commands, 0, 3000)
	for i := 0; i < 3000; i++ {
		_, _ = rand.Read(value)
		cmds = append(cmds, c.B().Set().Key(fmt.Sprintf("k:%d", i)).Value(string(value)).Build())
	}
	for _, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Do(ctx, c.B().Wait().Numreplicas(1).Timeout(60000).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := k.Create(ctx, newBackup(ns, "killed", "slow")); err != nil {
		t.Fatal(err)
	}
	waitBackup(t, ns, "killed", time.Minute, "Running", phase(v1alpha1.BackupRunning))
	for deadline := time.Now().Add(30 * time.Second); uploadsInProgress(t, ctx, store) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no multipart upload began within 30 s of the backup running")
		}
	}
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	killed = true
	if n := uploadsInProgress(t, ctx, store); n == 0 {
		t.Fatal("the SIGKILLed operator's upload is not in the store: the test would prove nothing")
	}

	startOperator(t, "", func(c *manager.Config) { c.BackupBackOff, c.BackupAttempts = 2*time.Second, 10 })
	vb := waitBackup(t, ns, "killed", 3*time.Minute, "Completed", phase(v1alpha1.BackupCompleted))
	if vb.Status.Attempts < 2 {
		t.Errorf("completed in %d attempt(s); want the killed one counted", vb.Status.Attempts)
	}
	if note := eventNote(t, ctx, ns, "killed", "BackupFailed"); !strings.Contains(note, "interrupted") {
		t.Errorf("the interrupted attempt's Event says %q; want it called interrupted", note)
	}
	if n := uploadsInProgress(t, ctx, store); n != 0 {
		t.Errorf("%d multipart upload(s) left in the store after the next attempt", n)
	}
	if err := c.Do(ctx, c.B().Set().Key("serving").Value("yes").Build()).Error(); err != nil {
		t.Errorf("the cluster refused a write: %v", err)
	}
}
