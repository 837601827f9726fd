package operatorsuite

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// pluginIn runs the plugin binary's verb on namespace ns with stdin, connection flags
// before the verb's own arguments (after --, arguments are valkey-cli's).
func pluginIn(t *testing.T, bin, stdin, verb, ns string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{verb, "--kubeconfig", cl.KubeconfigPath(), "-n", ns}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// TestKubectlValkeyCli: kubectl valkey cli runs valkey-cli in the primary's pod (or a
// replica's), as the application's user unless --valkey-user operator, with commands from its
// arguments, from piped input, or interactively on a terminal; the password is on no command
// line of any process of the machine (the local cluster's pods are its processes) while a
// session runs, and never in what the session shows.
func TestKubectlValkeyCli(t *testing.T) {
	ns, _, vc := steadyReplication(t, "clicache", 3*time.Minute)
	bin := pluginBinary(t)
	secrets := []string{password(t, vc), secretKey(t, vc, kube.KeyOperatorPassword), secretKey(t, vc, kube.KeyReplicationPassword)}
	run := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, err := pluginIn(t, bin, stdin, "cli", ns, args...)
		if err != nil {
			t.Fatalf("kubectl valkey cli %v: %v\n%s%s", args, err, out, errOut)
		}
		for _, s := range secrets {
			if strings.Contains(out+errOut, s) {
				t.Fatalf("kubectl valkey cli %v shows a password:\n%s%s", args, out, errOut)
			}
		}
		return out
	}

	if out := run("", "clicache", "--", "SET", "greeting", "hello"); out != "OK\n" {
		t.Fatalf("SET on the primary: %q", out)
	}
	// The replica is another pod, caught up with the primary's write.
	deadline := time.Now().Add(30 * time.Second)
	for out := ""; out != "hello\n"; out = run("", "clicache", "--replica", "--", "GET", "greeting") {
		if time.Now().After(deadline) {
			t.Fatalf("GET on a replica: %q", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out := run("", "clicache", "--replica", "--", "INFO", "replication"); !strings.Contains(out, "role:slave") {
		t.Errorf("--replica reached a node that says:\n%s", out)
	}
	if out := run("", "clicache", "--pod", vc.Status.Primary, "--", "INFO", "replication"); !strings.Contains(out, "role:master") {
		t.Errorf("--pod %s (the primary) says:\n%s", vc.Status.Primary, out)
	}
	// The application's user: data yes, administration no; the operator's: the reverse.
	if out := run("", "clicache", "--", "ACL", "WHOAMI"); out != "default\n" {
		t.Errorf("the session's user: %q", out)
	}
	if out := run("", "clicache", "--", "CONFIG", "GET", "maxmemory-policy"); !strings.Contains(out, "NOPERM") {
		t.Errorf("CONFIG GET as the application's user: %q, want NOPERM", out)
	}
	if out := run("", "clicache", "--valkey-user", "operator", "--", "CONFIG", "GET", "maxmemory-policy"); !strings.HasPrefix(out, "maxmemory-policy\n") {
		t.Errorf("CONFIG GET as the operator's user: %q", out)
	}
	if out := run("", "clicache", "--valkey-user", "operator", "--", "GET", "greeting"); !strings.Contains(out, "NOPERM") {
		t.Errorf("GET as the operator's user: %q, want NOPERM", out)
	}
	// Piped commands, after the password on the same input.
	if out := run("DBSIZE\nGET greeting\n", "clicache"); out != "1\nhello\n" {
		t.Errorf("piped commands: %q", out)
	}
	if _, errOut, err := pluginIn(t, bin, "", "cli", ns, "clicache", "--valkey-user", "replication"); err == nil || !strings.Contains(err.Error()+errOut, "--valkey-user replication") {
		t.Errorf("--valkey-user replication: %v %s", err, errOut)
	}
	if _, errOut, err := pluginIn(t, bin, "", "cli", ns, "clicache", "--shard", "1"); err == nil || !strings.Contains(errOut, "--shard is for topology Cluster") {
		t.Errorf("--shard on a Replication cluster: %v %s", err, errOut)
	}

	interactiveSession(t, bin, ns, vc, secrets)
}

// interactiveSession runs kubectl valkey cli on a terminal, as a user at a shell does, and
// looks at every command line of the machine while it runs.
func interactiveSession(t *testing.T, bin, ns string, vc *v1alpha1.ValkeyCluster, secrets []string) {
	t.Helper()
	ptm, pts := openPTY(t)
	cmd := exec.Command(bin, "cli", "--kubeconfig", cl.KubeconfigPath(), "-n", ns, vc.Name)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := unix.IoctlSetWinsize(int(ptm.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = pts.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var mu sync.Mutex
	var screen bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	shown := func() string {
		mu.Lock()
		defer mu.Unlock()
		return screen.String()
	}
	waitShown := func(what, want string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(shown(), want); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the session never showed %s (%q):\n%q", what, want, shown())
			}
		}
	}
	primaryIP := ""
	for _, n := range vc.Status.Nodes {
		if n.Pod == vc.Status.Primary {
			primaryIP = n.IP
		}
	}
	prompt := primaryIP + ":6379> " // valkey-cli's prompt names the node
	waitShown("valkey-cli's prompt", prompt)
	if _, err := ptm.Write([]byte("GET greeting\r")); err != nil {
		t.Fatal(err)
	}
	waitShown("the answer", `"hello"`)

	// While the session runs: its valkey-cli is a process of the machine, asking for the
	// password on its input; no process has a password among its arguments.
	askpass := false
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // ended meanwhile
		}
		line := string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		if strings.HasPrefix(line, "valkey-cli ") && strings.Contains(line, "--askpass") && strings.Contains(line, " "+primaryIP+" ") {
			askpass = true
		}
		for _, s := range secrets {
			if strings.Contains(line, s) {
				t.Errorf("a password is on the command line of %s: %s", filepath.Dir(p), line)
			}
		}
	}
	if !askpass {
		t.Errorf("no valkey-cli --askpass process of the session found among %d processes", len(procs))
	}

	if _, err := ptm.Write([]byte("quit\r")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the session ended with %v:\n%q", err, shown())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the session did not end after quit:\n%q", shown())
	}
	for _, s := range append(secrets, "Please input password") {
		if strings.Contains(shown(), s) {
			t.Errorf("the session showed %q:\n%q", s, shown())
		}
	}
	t.Logf("the session showed:\n%q", shown())
}

// openPTY opens a pseudo-terminal pair: the plugin's terminal for an interactive session.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ptm, pts
}

// TestKubectlValkeyCliAndReportOnAClusterTopology: in a Cluster topology the session starts
// on shard 0's primary (or --shard's) and follows MOVED to the shard that owns a key,
// authenticating there too; a report has each node's view of the cluster bus.
func TestKubectlValkeyCliAndReportOnAClusterTopology(t *testing.T) {
	ns, _, vc := steadyShards(t, "clishop", 3, 2, "", 5*time.Minute)
	bin := pluginBinary(t)
	for i := range 12 {
		out, errOut, err := pluginIn(t, bin, "", "cli", ns, "clishop", "--", "SET", fmt.Sprintf("key-%d", i), fmt.Sprint(i))
		if err != nil || out != "OK\n" {
			t.Fatalf("SET key-%d through shard 0: %v %q %s", i, err, out, errOut)
		}
	}
	primaries := map[string]bool{}
	for _, s := range vc.Status.Shards {
		out, errOut, err := pluginIn(t, bin, "", "cli", ns, "clishop", "--shard", fmt.Sprint(s.Index), "--", "CLUSTER", "MYID")
		if err != nil {
			t.Fatalf("--shard %d: %v %s", s.Index, err, errOut)
		}
		primaries[out] = true
		// Every key is read back from every shard: the ones it does not own by redirection.
		for i := range 12 {
			out, errOut, err := pluginIn(t, bin, "", "cli", ns, "clishop", "--shard", fmt.Sprint(s.Index), "--", "GET", fmt.Sprintf("key-%d", i))
			if err != nil || out != fmt.Sprintf("%d\n", i) {
				t.Fatalf("GET key-%d through shard %d: %v %q %s", i, s.Index, err, out, errOut)
			}
		}
	}
	if len(primaries) != 3 {
		t.Errorf("--shard 0, 1 and 2 reached %d distinct nodes, want 3", len(primaries))
	}
	// The keys did spread: a shard's own count is less than all of them.
	out, _, err := pluginIn(t, bin, "", "cli", ns, "clishop", "--", "DBSIZE")
	if err != nil || out == "12\n" || out == "0\n" {
		t.Errorf("shard 0 holds %q of 12 keys: the keys did not spread over the shards (%v)", out, err)
	}

	archive := filepath.Join(t.TempDir(), "clishop.tar.gz")
	if out, errOut, err := pluginIn(t, bin, "", "report", ns, "clishop", "--archive", archive); err != nil {
		t.Fatalf("kubectl valkey report: %v\n%s%s", err, out, errOut)
	}
	files := readArchive(t, archive)
	var pods corev1.PodList
	if err := k.List(ctxFor(t, 10*time.Second), &pods, client.InNamespace(ns), client.MatchingLabels{kube.LabelCluster: "clishop"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 6 {
		t.Fatalf("%d pods of clishop", len(pods.Items))
	}
	dir := ""
	for name := range files {
		dir, _, _ = strings.Cut(name, "/")
	}
	for _, p := range pods.Items {
		if c := files[dir+"/nodes/"+p.Name+"/cluster-info.txt"]; !strings.Contains(c, "cluster_state:ok") {
			t.Errorf("%s's cluster-info.txt: %q", p.Name, c)
		}
		if c := files[dir+"/nodes/"+p.Name+"/cluster-nodes.txt"]; strings.Count(c, "\n") != 6 || !strings.Contains(c, "myself") {
			t.Errorf("%s's cluster-nodes.txt does not list 6 nodes:\n%s", p.Name, c)
		}
	}
}
