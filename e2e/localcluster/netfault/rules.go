package netfault

import (
	"fmt"
	"net/netip"
	"strings"
)

// Partition drops every packet from a to b and from b to a, so that connections between the
// two addresses time out in both directions (TCP needs both directions, but dropping both
// also makes established connections stall instead of half-working). Traffic of a and b with
// any other address is untouched. Rules add up: partitioning a from b and from c drops both.
func (t *Table) Partition(a, b netip.Addr) error {
	a, b = a.Unmap(), b.Unmap()
	if err := checkAddrs(a, b); err != nil {
		return err
	}
	fam := family(a)
	return t.apply(t.addRule(fmt.Sprintf("%[1]s saddr %[2]s %[1]s daddr %[3]s drop", fam, a, b)) +
		t.addRule(fmt.Sprintf("%[1]s saddr %[3]s %[1]s daddr %[2]s drop", fam, a, b)))
}

// Isolate cuts a off from every other address, in both directions, except from a itself (a
// process talking to its own address, as a Valkey server does with itself, is inside the
// "pod") and from the addresses in except.
//
// What "every other address" means on loopback: a client that dials without binding a local
// address gets the source 127.0.0.1 (the route's preferred source), so the test process,
// the API server and every unbound client look like 127.0.0.1. Isolate drops them too, which
// is what a partitioned Pod experiences: nobody reaches it and it reaches nobody. To keep,
// say, the test process's own probes working, pass 127.0.0.1 in except.
func (t *Table) Isolate(a netip.Addr, except ...netip.Addr) error {
	a = a.Unmap()
	if err := checkAddrs(a); err != nil {
		return err
	}
	allowed := []string{a.String()}
	for _, e := range except {
		e = e.Unmap()
		if err := checkAddrs(a, e); err != nil {
			return err
		}
		allowed = append(allowed, e.String())
	}
	fam := family(a)
	set := "{ " + strings.Join(allowed, ", ") + " }"
	return t.apply(t.addRule(fmt.Sprintf("%[1]s saddr %[2]s %[1]s daddr != %[3]s drop", fam, a, set)) +
		t.addRule(fmt.Sprintf("%[1]s daddr %[2]s %[1]s saddr != %[3]s drop", fam, a, set)))
}

// Heal removes every rule and keeps the (empty) table for further faults.
func (t *Table) Heal() error {
	return t.apply(fmt.Sprintf("flush chain inet %[1]s %[2]s\nflush chain bridge %[1]s %[3]s\n", t.name, chain, bridgeChain))
}

// Rules returns the table as nft prints it, for logs of failing tests.
func (t *Table) Rules() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return "", ErrClosed
	}
	inet, err := nftOutput("list", "table", "inet", t.name)
	if err != nil {
		return "", err
	}
	bridge, err := nftOutput("list", "table", "bridge", t.name)
	if err != nil {
		return "", err
	}
	return inet + bridge, nil
}

// checkAddrs refuses invalid, non-loopback and mixed-family addresses. Rules on loopback
// addresses cannot affect traffic that leaves the machine, whatever a caller passes.
func checkAddrs(addrs ...netip.Addr) error {
	for _, a := range addrs {
		if !a.IsValid() {
			return fmt.Errorf("netfault: invalid address")
		}
		if !a.IsLoopback() {
			return fmt.Errorf("netfault: %s is not a loopback address; only loopback traffic may be dropped", a)
		}
		if a.Is4() != addrs[0].Is4() {
			return fmt.Errorf("netfault: %s and %s are of different address families", addrs[0], a)
		}
	}
	return nil
}

// family is the nft payload keyword for an address ("ip" or "ip6").
func family(a netip.Addr) string {
	if a.Is4() {
		return "ip"
	}
	return "ip6"
}
