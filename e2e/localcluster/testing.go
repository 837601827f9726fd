package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// RunTests is a TestMain for a package whose tests share one local cluster (each test in a
// namespace of its own). It starts the cluster, runs the tests, stops the cluster and returns
// the exit code. The cluster's log goes to .cache/logs/<name>.log; when a test fails its tail
// is printed. Without root, tests that ask for a namespace are skipped with ErrNotRoot.
// setup runs once the cluster is up (installing CRDs, say); its failure fails the package.
func RunTests(m *testing.M, name string, opts Options, out **Cluster, setup ...func(*Cluster) error) int {
	logPath := ""
	if root, err := kubeassets.RepoRoot(); err == nil {
		logPath = filepath.Join(root, ".cache", "logs", name+".log")
		_ = os.MkdirAll(filepath.Dir(logPath), 0o755)
	}
	var logFile *os.File
	if logPath != "" && opts.Log == nil {
		if f, err := os.Create(logPath); err == nil {
			suiteLogPath = logPath
			logFile = f
			opts.Log = f
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	cl, err := Start(ctx, opts)
	switch {
	case errors.Is(err, ErrNotRoot):
		fmt.Fprintln(os.Stderr, "localcluster:", err)
	case err != nil:
		fmt.Fprintln(os.Stderr, "localcluster: starting the local cluster:", err)
		printTail(logPath)
		return 1
	default:
		fmt.Fprintf(os.Stderr, "localcluster: %s up in %s (log: %s)\n", name, time.Since(start).Round(time.Millisecond), logPath)
		for _, f := range setup {
			if err := f(cl); err != nil {
				fmt.Fprintln(os.Stderr, "localcluster: setting up the suite:", err)
				_ = cl.Stop()
				printTail(logPath)
				return 1
			}
		}
	}
	*out = cl
	code := m.Run()
	if cl != nil && opts.AfterTests != nil {
		if err := opts.AfterTests(cl); err != nil {
			fmt.Fprintln(os.Stderr, "localcluster: after the tests:", err)
			code = 1
		}
	}
	if cl != nil {
		if err := cl.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "localcluster: stop:", err)
			code = 1
		}
	}
	if logFile != nil {
		_ = logFile.Close()
	}
	if code != 0 {
		printTail(logPath)
	}
	return code
}

// suiteLogPath is the log RunTests writes, for SuiteLog.
var suiteLogPath string

// SuiteLog returns the lines of the package's cluster log (control plane, pods, and anything a
// test wrote through Cluster.Log) that contain every one of the given strings, the last max
// of them: evidence for a failing test's message.
func SuiteLog(max int, contains ...string) string {
	data, err := os.ReadFile(suiteLogPath)
	if err != nil {
		return ""
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		ok := true
		for _, c := range contains {
			ok = ok && strings.Contains(line, c)
		}
		if ok {
			out = append(out, line)
		}
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return strings.Join(out, "\n")
}

func printTail(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) > 150 {
		lines = lines[len(lines)-150:]
	}
	fmt.Fprintf(os.Stderr, "---- last lines of %s ----\n%s\n", path, strings.Join(lines, "\n"))
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a namespace for one test (named after it), waits for its default
// ServiceAccount, and deletes it when the test ends. A nil cluster skips the test.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	if c == nil {
		t.Skip(ErrNotRoot.Error())
	}
	base := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	name := base + "-" + rand.String(5)
	ctx := context.Background()
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = c.cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return name
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s has no default ServiceAccount after 30s", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
