package netfault

import (
	"fmt"
	"net/netip"
	"strings"
)

// Endpoint is one side of a partition: an address and, optionally, the cgroup v2 group whose
// sockets belong to it (a path relative to the cgroup2 mount, e.g. "vkfsm-lc0/<pod-uid>").
//
// Matching by address alone misses most loopback traffic: a process that does not bind its
// source address connects from 127.0.0.1, whoever it is. Matching the sending socket's
// cgroup catches everything the endpoint's processes send, whatever source they use.
type Endpoint struct {
	Addr   netip.Addr
	Cgroup string
}

// PartitionEndpoints drops traffic between a and b in both directions: by address as
// Partition does, and every packet that a socket of a's cgroup sends to b's address (and the
// reverse).
func (t *Table) PartitionEndpoints(a, b Endpoint) error {
	return t.drop([2]Endpoint{a, b}, [2]Endpoint{b, a})
}

// DropEndpoints drops what from sends to to, one way only: by address, and every packet a
// socket of from's cgroup sends to to's address. What to sends to from still arrives, so a
// connection either side opens half-works (a SYN arrives, its answer does not) and an
// established one carries only to's data: an asymmetric route or a firewall rule on one side.
func (t *Table) DropEndpoints(from, to Endpoint) error {
	return t.drop([2]Endpoint{from, to})
}

// drop adds, in one script, the rules that drop what each pair's first endpoint sends to its
// second.
func (t *Table) drop(pairs ...[2]Endpoint) error {
	var rules strings.Builder
	for _, p := range pairs {
		from, to := p[0], p[1]
		from.Addr, to.Addr = from.Addr.Unmap(), to.Addr.Unmap()
		if err := checkAddrs(from.Addr, to.Addr); err != nil {
			return err
		}
		fam := family(from.Addr)
		rules.WriteString(t.addRule(fmt.Sprintf("%[1]s saddr %[2]s %[1]s daddr %[3]s drop", fam, from.Addr, to.Addr)))
		if from.Cgroup == "" {
			continue
		}
		m, err := cgroupMatch(from.Cgroup)
		if err != nil {
			return err
		}
		fmt.Fprintf(&rules, "add rule inet %s %s %s %s daddr %s drop\n", t.name, chain, m, fam, to.Addr)
	}
	return t.applyWithCgroups(rules.String())
}

// IsolateEndpoint cuts a off from every other address as Isolate does, and also drops
// whatever a's cgroup sends to any address but its own and those in except.
func (t *Table) IsolateEndpoint(a Endpoint, except ...netip.Addr) error {
	if err := t.Isolate(a.Addr, except...); err != nil {
		return err
	}
	if a.Cgroup == "" {
		return nil
	}
	m, err := cgroupMatch(a.Cgroup)
	if err != nil {
		return err
	}
	allowed := []string{a.Addr.Unmap().String()}
	for _, e := range except {
		allowed = append(allowed, e.Unmap().String())
	}
	return t.applyWithCgroups(fmt.Sprintf("add rule inet %s %s %s %s daddr != { %s } drop\n",
		t.name, chain, m, family(a.Addr), strings.Join(allowed, ", ")))
}

// cgroupMatch is the nft expression for "the sending socket belongs to this group or below".
func cgroupMatch(group string) (string, error) {
	group = strings.Trim(group, "/")
	if group == "" || strings.ContainsAny(group, "\"\n ") {
		return "", fmt.Errorf("netfault: invalid cgroup path %q", group)
	}
	return fmt.Sprintf("socket cgroupv2 level %d %q", strings.Count(group, "/")+1, group), nil
}

// applyWithCgroups runs a script that names cgroup paths (see runNftWithCgroups).
func (t *Table) applyWithCgroups(script string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	return runNftWithCgroups(script)
}
