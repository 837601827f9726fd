package netfault

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The cgroup tests need a client process inside a cgroup. The test binary itself is that
// process: started with helperDialEnv set, TestMain dials the address it names instead of
// running tests, prints its cgroup, and reports through its exit code.
const helperDialEnv = "NETFAULT_TEST_DIAL"

const (
	helperReached  = 0
	helperTimedOut = 3
	helperFailed   = 4
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(helperDialEnv); addr != "" {
		os.Exit(helperDial(addr))
	}
	os.Exit(m.Run())
}

// helperDial dials addr without binding a source address, as most programs do (so the
// packets leave from 127.0.0.1), and reads the greeting.
func helperDial(addr string) int {
	if cg, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(cg), "\n") {
			if strings.HasPrefix(line, "0::") {
				fmt.Println(line)
			}
		}
	}
	c, err := net.DialTimeout("tcp", addr, blockedAfter)
	if err == nil {
		_ = c.SetReadDeadline(time.Now().Add(blockedAfter))
		_, err = bufio.NewReader(c).ReadString('\n')
		_ = c.Close()
	}
	switch {
	case err == nil:
		return helperReached
	case isTimeout(err):
		return helperTimedOut
	default:
		fmt.Fprintln(os.Stderr, err)
		return helperFailed
	}
}

// testCgroup creates a cgroup v2 group for the test and returns its path relative to the
// cgroup2 mount (what Endpoint.Cgroup wants) and an open directory for CLONE_INTO_CGROUP.
func testCgroup(t *testing.T) (rel string, dir *os.File) {
	t.Helper()
	skipUnlessPrivileged(t)
	mount := cgroup2Mount()
	if mount == "" {
		t.Skip("no cgroup v2 hierarchy is mounted")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) is not installed")
	}
	rel = fmt.Sprintf("vkfsm-netfault-test-%d", os.Getpid())
	path := filepath.Join(mount, rel)
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.Open(path)
	if err != nil {
		_ = os.Remove(path)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dir.Close()
		// Helpers are waited for before this runs, so the group is empty and rmdir works.
		if err := os.Remove(path); err != nil {
			t.Errorf("removing test cgroup: %v", err)
		}
	})
	return rel, dir
}

// cgroup2Mount finds the unified hierarchy: /sys/fs/cgroup on a pure v2 host,
// /sys/fs/cgroup/unified on a hybrid one.
func cgroup2Mount() string {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[2] == "cgroup2" {
			return f[1]
		}
	}
	return ""
}

// dialFromCgroup runs the helper inside the group and returns its exit code.
func dialFromCgroup(t *testing.T, rel string, dir *os.File, s server) int {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperDialEnv+"="+s.addr.String())
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	out, err := cmd.Output()
	if !strings.Contains(string(out), "0::/"+rel) {
		t.Fatalf("helper did not run in cgroup %s: %q, %v", rel, out, err)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if exit.ExitCode() == helperFailed {
			t.Errorf("helper dial to %s failed: %s", s.addr, exit.Stderr)
		}
		return exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return helperReached
}

func TestPartitionEndpointsMatchesCgroup(t *testing.T) {
	rel, dir := testCgroup(t)
	tb := newTable(t, t.Name())
	const a, b, c = "127.251.8.1", "127.251.8.2", "127.251.8.3"
	sb, sc := startServer(t, b), startServer(t, c)

	if got := dialFromCgroup(t, rel, dir, sb); got != helperReached {
		t.Fatalf("before the partition: helper exit %d, want a connection", got)
	}
	err := tb.PartitionEndpoints(
		Endpoint{Addr: netip.MustParseAddr(a), Cgroup: rel},
		Endpoint{Addr: netip.MustParseAddr(b)})
	if err != nil {
		t.Fatal(err)
	}
	// The group's process dials from 127.0.0.1, yet the cgroup rule catches it.
	if got := dialFromCgroup(t, rel, dir, sb); got != helperTimedOut {
		t.Errorf("from the cgroup to b: helper exit %d, want %d (timeout)", got, helperTimedOut)
	}
	if got := dialFromCgroup(t, rel, dir, sc); got != helperReached {
		t.Errorf("from the cgroup to c: helper exit %d, want a connection", got)
	}
	mustReach(t, "", sb)  // the same source address from outside the group is not cut
	mustTimeOut(t, a, sb) // and the address rules hold as with Partition
	mustTimeOut(t, b, startServer(t, a))

	if err := tb.Heal(); err != nil {
		t.Fatal(err)
	}
	if got := dialFromCgroup(t, rel, dir, sb); got != helperReached {
		t.Errorf("after Heal: helper exit %d, want a connection", got)
	}
}

func TestIsolateEndpointMatchesCgroup(t *testing.T) {
	rel, dir := testCgroup(t)
	tb := newTable(t, t.Name())
	const a, b, c = "127.251.9.1", "127.251.9.2", "127.251.9.3"
	sb, sc := startServer(t, b), startServer(t, c)

	if err := tb.IsolateEndpoint(Endpoint{Addr: netip.MustParseAddr(a), Cgroup: rel}, netip.MustParseAddr(c)); err != nil {
		t.Fatal(err)
	}
	if got := dialFromCgroup(t, rel, dir, sb); got != helperTimedOut {
		t.Errorf("from the isolated cgroup to b: helper exit %d, want %d (timeout)", got, helperTimedOut)
	}
	if got := dialFromCgroup(t, rel, dir, sc); got != helperReached {
		t.Errorf("from the isolated cgroup to the exception c: helper exit %d, want a connection", got)
	}
	mustReach(t, "", sb)
	mustTimeOut(t, b, startServer(t, a))
}
