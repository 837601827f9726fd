package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Containers' memory limits, applied as a kubelet applies them: a container's
// resources.limits.memory becomes its cgroup's hard limit, the kernel's OOM killer ends a
// container that allocates past it, and the kubelet reports that run as terminated with
// reason OOMKilled (exit code 137) and restarts it. Without this a test of "the operator
// stays within its limit" would pass whatever the operator allocated.
//
// The memory controller lives in one hierarchy: the unified (v2) one on a pure v2 machine,
// the v1 "memory" hierarchy on a hybrid one (v2 mounted beside v1, the memory controller
// bound to v1, as on some CI machines). A kubelet with the cgroupfs driver uses whichever
// holds it; so does this one. On v2 the limit is the container's own group's memory.max
// (the memory controller enabled down the cluster's subtree); on v1 the container's
// processes also join a group of the same path under the v1 memory hierarchy, below the
// group this process runs in, whose memory.limit_in_bytes is the limit.

// ErrNoMemoryController is returned when neither hierarchy offers the memory controller:
// limits are then not enforced and no memory figures exist.
var ErrNoMemoryController = errors.New("the memory cgroup controller is not available: containers' memory limits are not enforced")

// memoryCgroups is where the cluster's containers' memory groups live.
type memoryCgroups struct {
	v2   bool   // the groups are the containers' own v2 groups
	base string // the cluster's group in the hierarchy that holds the memory controller
}

// newMemoryCgroups finds the memory controller for the cluster whose v2 group is cg; nil
// when there is none (see ErrNoMemoryController).
func newMemoryCgroups(cg *cgroupRoot) *memoryCgroups {
	if enableMemoryV2(cg) {
		return &memoryCgroups{v2: true, base: cg.path()}
	}
	if dir := memoryV1Group(); dir != "" {
		m := &memoryCgroups{base: filepath.Join(dir, cg.name)}
		removeGroup(m.base) // a dead run's leftovers
		if os.MkdirAll(m.base, 0o755) == nil {
			return m
		}
	}
	return nil
}

// enableMemoryV2 turns the memory controller on for the cluster's group's children, if the
// unified hierarchy has it: in the mount's root group (the cluster's parent) and in the
// cluster's group. A group with controllers for its children may hold no process itself;
// the cluster's and the Pods' groups hold none (processes live in containers' groups).
func enableMemoryV2(cg *cgroupRoot) bool {
	if !hasController(filepath.Join(cg.mount, "cgroup.controllers"), "memory") {
		return false
	}
	for _, dir := range []string{cg.mount, cg.path()} {
		if hasController(filepath.Join(dir, "cgroup.subtree_control"), "memory") {
			continue
		}
		if os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory"), 0o644) != nil {
			return false
		}
	}
	return true
}

func hasController(file, name string) bool {
	data, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	for _, c := range strings.Fields(string(data)) {
		if c == name {
			return true
		}
	}
	return false
}

// memoryV1Group is the directory of this process's group in the v1 memory hierarchy ("" when
// there is no such hierarchy): where the mount is, plus this process's path in the hierarchy
// relative to the mount's root (which, inside a cgroup namespace, is not the hierarchy's).
func memoryV1Group() string {
	mount, root := "", ""
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "36 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory"
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 || tail[0] != "cgroup" {
			continue
		}
		for _, opt := range strings.Split(tail[2], ",") {
			if opt == "memory" {
				root, mount = fields[3], fields[4]
			}
		}
	}
	if mount == "" {
		return ""
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(own), "\n") {
		// "4:memory:/process_api/bf81..."
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !hasName(parts[1], "memory") {
			continue
		}
		rel, ok := strings.CutPrefix(parts[2], root)
		if !ok {
			return ""
		}
		return filepath.Join(mount, rel)
	}
	return ""
}

func hasName(list, name string) bool {
	for _, n := range strings.Split(list, ",") {
		if n == name {
			return true
		}
	}
	return false
}

// group makes the container's memory group and sets its limit (0: none). On v2 it is the
// container's own group, dir; the Pod's group, its parent, passes the controller down.
func (m *memoryCgroups) group(dir, pod, container string, limit int64) (string, error) {
	if m.v2 {
		if err := os.WriteFile(filepath.Join(filepath.Dir(dir), "cgroup.subtree_control"), []byte("+memory"), 0o644); err != nil {
			return "", fmt.Errorf("enabling the memory controller for pod %s: %w", pod, err)
		}
		v := "max"
		if limit > 0 {
			v = strconv.FormatInt(limit, 10)
		}
		return dir, os.WriteFile(filepath.Join(dir, "memory.max"), []byte(v), 0o644)
	}
	g := filepath.Join(m.base, pod, container)
	if err := os.MkdirAll(g, 0o755); err != nil {
		return "", err
	}
	v := "-1"
	if limit > 0 {
		v = strconv.FormatInt(limit, 10)
	}
	return g, os.WriteFile(filepath.Join(g, "memory.limit_in_bytes"), []byte(v), 0o644)
}

// remove deletes a Pod's memory groups once its processes are gone (v1; on v2 they are the
// Pod's own groups, which cgroupRoot removes).
func (m *memoryCgroups) remove(pod string) {
	if !m.v2 {
		removeGroup(filepath.Join(m.base, pod))
	}
}

func (m *memoryCgroups) removeAll() {
	if !m.v2 {
		removeGroup(m.base)
	}
}

// ContainerMemory is the kernel's accounting of a container's memory group, over every run
// of the container (the group outlives a restart). Page cache the container caused counts,
// as it does toward the limit.
type ContainerMemory struct {
	Limit     int64 // bytes; 0 when the container has no limit
	Current   int64 // bytes charged now
	Peak      int64 // the most ever charged (v2 memory.peak, v1 memory.max_usage_in_bytes)
	LimitHits int64 // how often the charge reached the limit and the kernel had to reclaim (v2 memory.events max, v1 memory.failcnt)
	OOMKills  int64 // processes the OOM killer ended in the group
}

// read is the accounting of the memory group dir.
func (m *memoryCgroups) read(dir string) (ContainerMemory, error) {
	var st ContainerMemory
	num := func(name string) (int64, error) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0, err
		}
		s := strings.TrimSpace(string(data))
		if s == "max" {
			return 0, nil
		}
		return strconv.ParseInt(s, 10, 64)
	}
	var err error
	if m.v2 {
		if st.Limit, err = num("memory.max"); err != nil {
			return st, err
		}
		if st.Current, err = num("memory.current"); err != nil {
			return st, err
		}
		if st.Peak, err = num("memory.peak"); err != nil {
			return st, err
		}
		events, err := keyed(filepath.Join(dir, "memory.events"))
		st.LimitHits, st.OOMKills = events["max"], events["oom_kill"]
		return st, err
	}
	if st.Limit, err = num("memory.limit_in_bytes"); err != nil {
		return st, err
	}
	if st.Limit >= 1<<62 { // v1's "unlimited" is the largest page-aligned int64
		st.Limit = 0
	}
	if st.Current, err = num("memory.usage_in_bytes"); err != nil {
		return st, err
	}
	if st.Peak, err = num("memory.max_usage_in_bytes"); err != nil {
		return st, err
	}
	if st.LimitHits, err = num("memory.failcnt"); err != nil {
		return st, err
	}
	ctl, err := keyed(filepath.Join(dir, "memory.oom_control"))
	st.OOMKills = ctl["oom_kill"]
	return st, err
}

// oomKills is how many processes the OOM killer has ended in the group dir (0 when it
// cannot tell).
func (m *memoryCgroups) oomKills(dir string) int64 {
	st, err := m.read(dir)
	if err != nil {
		return 0
	}
	return st.OOMKills
}

// keyed reads a cgroup file of "key value" lines.
func keyed(file string) (map[string]int64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out, nil
}

// memoryGroup makes the container's memory group with the container's memory limit and
// returns it ("" when the cluster has no memory controller). cg is its v2 group.
func (r *podRunner) memoryGroup(c *container, cg string) (string, error) {
	if r.cluster.mem == nil {
		return "", nil
	}
	var limit int64
	if q, ok := c.spec.Resources.Limits[corev1.ResourceMemory]; ok {
		limit = q.Value()
	}
	return r.cluster.mem.group(cg, string(r.currentPod().UID), c.spec.Name, limit)
}

// ContainerMemory is the kernel's accounting of a container's memory (its cgroup's figures,
// not what the process says about itself). ErrNoMemoryController when the machine has none.
func (c *Cluster) ContainerMemory(namespace, pod, container string) (ContainerMemory, error) {
	if c.mem == nil {
		return ContainerMemory{}, ErrNoMemoryController
	}
	_, ct, err := c.container(namespace, pod, container)
	if err != nil {
		return ContainerMemory{}, err
	}
	ct.mu.Lock()
	dir := ct.mem
	ct.mu.Unlock()
	if dir == "" {
		return ContainerMemory{}, fmt.Errorf("container %s of %s/%s has not started", container, namespace, pod)
	}
	return c.mem.read(dir)
}

// MemoryLimitsEnforced says whether containers' memory limits hold in this cluster.
func (c *Cluster) MemoryLimitsEnforced() bool { return c.mem != nil }
