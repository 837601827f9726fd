package localcluster

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// StateDir holds one directory per running local cluster, each claimed by a pid file. Several
// local clusters (test packages run in parallel) each claim a free slot, which gives them
// disjoint loopback ranges and directories.
const StateDir = "/tmp/vkfsm-localcluster"

const maxSlots = 30

// slot is the claim of one local cluster on a loopback range and a directory.
type slot struct {
	n   int
	dir string
}

// Pod IPs of slot n are 127.(100+n).x.y, node IPs 127.(100+n).0.(i+1), Service ClusterIPs
// 127.(200+n).0.0/16: all loopback, so every dial in a test stays on this machine.
func (s slot) podPrefix() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{127, byte(100 + s.n), 0, 0}), 16)
}

func (s slot) serviceCIDR() string { return fmt.Sprintf("127.%d.0.0/16", 200+s.n) }

func (s slot) nodeIP(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(100 + s.n), 0, byte(i + 1)})
}

func (s slot) pidFile() string { return filepath.Join(StateDir, fmt.Sprintf("slot-%d.pid", s.n)) }

// claimSlot takes the first free slot; slots of processes that died (a panicking test, a
// killed CI job) are swept and re-used, so a crash never leaks more than one run's leftovers.
func claimSlot() (slot, error) {
	if err := os.MkdirAll(StateDir, 0o755); err != nil {
		return slot{}, err
	}
	for n := 0; n < maxSlots; n++ {
		s := slot{n: n, dir: filepath.Join(StateDir, fmt.Sprintf("cluster-%d", n))}
		f, err := os.OpenFile(s.pidFile(), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, os.ErrExist) {
			if ownerAlive(s.pidFile()) {
				continue
			}
			sweepSlot(s)
			f, err = os.OpenFile(s.pidFile(), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				continue // another process swept it first and took it
			}
		} else if err != nil {
			return slot{}, err
		}
		_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
		_ = f.Close()
		_ = os.RemoveAll(s.dir)
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return slot{}, err
		}
		return s, nil
	}
	return slot{}, fmt.Errorf("all %d local cluster slots under %s are taken by running processes", maxSlots, StateDir)
}

func ownerAlive(pidFile string) bool {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

// sweepSlot removes what a dead owner left: its processes (found by the cluster directory in
// their command line or environment), then its directory and pid file.
func sweepSlot(s slot) {
	killProcessesUnder(s.dir)
	sweepClusterNet(s)
	_ = os.RemoveAll(s.dir)
	_ = os.Remove(s.pidFile())
}

func (s slot) release() {
	_ = os.RemoveAll(s.dir)
	_ = os.Remove(s.pidFile())
}

// killProcessesUnder SIGKILLs every process whose environment carries LOCALCLUSTER_DIR=<dir>
// (every container and helper the cluster starts) or whose command line names a path under
// dir (etcd and kube-apiserver, whose data and certificates live there).
func killProcessesUnder(dir string) {
	marker := []byte(envClusterDir + "=" + dir + "\x00")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(env)+"\x00", string(marker)) || strings.Contains(string(cmdline), dir+"/") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// envClusterDir marks every process of a local cluster with its directory.
const envClusterDir = "LOCALCLUSTER_DIR"
