package netfault

import (
	"bytes"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Load replaces everything in the table with body, in one nft transaction: packets see the
// old rules or the new ones, never a mix, and a body nft refuses leaves the old rules in place.
// body is what goes between "table inet <name> {" and "}": chain definitions, including the
// base chain(s) with their hooks. It is for owners that rebuild a whole rule set on every
// change (the local cluster's NetworkPolicy enforcer); Partition, Isolate and Heal expect the
// output chain that New creates, so do not mix the two on one table. Rules may name cgroup
// v2 groups (socket cgroupv2 level N "path"), which nft resolves to group ids now: every
// group named must exist. The caller checks that its rules name only loopback addresses
// (CheckLoopback).
func (t *Table) Load(body string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	return runNftWithCgroups(fmt.Sprintf("table inet %[1]s\ndelete table inet %[1]s\ntable inet %[1]s {\n%[2]s}\n", t.name, body))
}

// CheckLoopback refuses invalid and non-loopback addresses, and a mix of families: the
// check every rule of this package passes.
func CheckLoopback(addrs ...netip.Addr) error { return checkAddrs(addrs...) }

// runNftWithCgroups runs nft where the cgroup2 hierarchy is mounted at /sys/fs/cgroup, which
// is where nft looks up group paths. On a hybrid host (v1 controllers at /sys/fs/cgroup, v2
// at /sys/fs/cgroup/unified) that takes a private mount namespace; the rule itself stores the
// group's id, which the kernel matches whatever is mounted where.
func runNftWithCgroups(script string) error {
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
		`mount -t cgroup2 none /sys/fs/cgroup && exec nft -f -`)
	cmd.Stdin = strings.NewReader(script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("netfault: nft -f - (with cgroup2 at /sys/fs/cgroup): %w: %s\nscript:\n%s", err, strings.TrimSpace(stderr.String()), script)
	}
	return nil
}
