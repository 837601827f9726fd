package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Leftovers lists what of the local cluster whose directory is dir still exists: processes
// marked with it, its directory, its cgroup and its nftables table. A stopped cluster has none.
func Leftovers(dir string) []string {
	var left []string
	n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "cluster-"))
	if err != nil {
		return []string{"not a local cluster directory: " + dir}
	}
	marker := envClusterDir + "=" + dir + "\x00"
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(env)+"\x00", marker) || strings.Contains(string(cmdline), dir+"/") {
			left = append(left, fmt.Sprintf("process %s: %s", e.Name(), strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	if _, err := os.Stat(dir); err == nil {
		left = append(left, "directory "+dir)
	}
	if m := cgroup2Mount(); m != "" {
		cg := filepath.Join(m, fmt.Sprintf("vkfsm-lc%d", n))
		if _, err := os.Stat(cg); err == nil {
			left = append(left, "cgroup "+cg)
		}
	}
	if v1 := memoryV1Group(); v1 != "" {
		cg := filepath.Join(v1, fmt.Sprintf("vkfsm-lc%d", n))
		if _, err := os.Stat(cg); err == nil {
			left = append(left, "memory cgroup "+cg)
		}
	}
	left = append(left, netLeftovers(n)...)
	if out, err := exec.Command("nft", "list", "tables").Output(); err == nil {
		prefix := fmt.Sprintf("vkfsm_lc%d_", n)
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) == 3 && strings.HasPrefix(f[2], prefix) {
				left = append(left, "nftables table "+f[2])
			}
		}
	}
	return left
}
