package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Each Pod's processes live in a cgroup v2 group of their own, <cluster>/<pod-uid>/<container>.
// Two things depend on it: killing a container kills everything it forked (cgroup.kill), and
// pausing freezes it the way a stalled machine would (cgroup.freeze). (Partitions and
// NetworkPolicies match addresses: each Pod sends from its own, from its own network
// namespace, podnet.go.)

// cgroup2Mount finds where the unified (v2) hierarchy is mounted: /sys/fs/cgroup on a pure
// v2 machine, /sys/fs/cgroup/unified on a hybrid one. Empty when there is none.
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == "cgroup2" {
			return fields[1]
		}
	}
	return ""
}

// cgroupRoot is the cluster's group: <mount>/vkfsm-lc<slot>.
type cgroupRoot struct {
	mount string // cgroup2 mount point
	name  string // the cluster's group, relative to the mount
}

func newCgroupRoot(s slot) (*cgroupRoot, error) {
	m := cgroup2Mount()
	if m == "" {
		return nil, errors.New("no cgroup v2 hierarchy is mounted; the local cluster needs one")
	}
	cg := &cgroupRoot{mount: m, name: fmt.Sprintf("vkfsm-lc%d", s.n)}
	cg.removeAll() // a dead run's leftovers
	return cg, os.MkdirAll(cg.path(), 0o755)
}

func (cg *cgroupRoot) path(parts ...string) string {
	return filepath.Join(append([]string{cg.mount, cg.name}, parts...)...)
}

func (cg *cgroupRoot) ensure(parts ...string) (string, error) {
	p := cg.path(parts...)
	return p, os.MkdirAll(p, 0o755)
}

// remove deletes a group (and its children) once its processes are gone, killing any left.
func (cg *cgroupRoot) remove(parts ...string) {
	removeGroup(cg.path(parts...))
}

func (cg *cgroupRoot) removeAll() { removeGroup(cg.path()) }

func removeGroup(dir string) {
	if _, err := os.Stat(dir); err != nil {
		return
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0o644)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeGroup(filepath.Join(dir, e.Name()))
		}
	}
	// The kernel needs a moment to reap killed processes before the group can go.
	for i := 0; i < 100; i++ {
		if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
