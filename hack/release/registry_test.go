package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startRegistry runs the CNCF distribution registry (hack/registry.sh builds it) on a free
// loopback port, its storage in a temporary directory, and returns its host:port. It is
// stopped when the test ends, also on failure.
func startRegistry(t *testing.T, root string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(root, "hack", "registry.sh")).Output()
	if err != nil {
		t.Fatalf("hack/registry.sh: %v", err)
	}
	bin := strings.TrimSpace(string(out))
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	// The registry binds the address itself; the port was free a moment ago and nothing else
	// in this test binds ports.
	_ = l.Close()
	config := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
`, filepath.Join(dir, "storage"), addr)
	cfg := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	// No tracing exporter: it would dial a collector.
	cmd.Env = append(os.Environ(), "OTEL_SDK_DISABLED=true", "OTEL_TRACES_EXPORTER=none")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		stopped := <-exited
		_ = logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("registry (%v) log:\n%s", stopped, b)
			}
		}
	})
	// Ready when the API's base answers (the distribution spec's GET /v2/).
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("the registry exited: %v\n%s", err, b)
		default:
		}
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry did not answer on %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
