package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Every Pod runs in a network namespace of its own, as under a kubelet: its own lo
// (127.0.0.1 is the Pod's, not the machine's) and its Pod IP on eth0, one end of a veth pair
// whose other end is a port of the cluster's bridge, vkfsm-lc<slot>. The bridge joins the
// Pods at layer 2, so Pod-to-Pod traffic needs no IPv4 forwarding, and the host reaches them
// through it.
//
// The addresses stay in 127.0.0.0/8 (tests dial nothing else), which Linux treats specially:
//   - a packet from or to 127/8 on an interface other than lo is martian unless the
//     interface has route_localnet=1, so the bridge and every Pod's eth0 (and "all" in the
//     Pod's namespace, which ARP consults) get it;
//   - table local has "local 127.0.0.0/8 dev lo", which makes every 127.x an address of the
//     machine. In a Pod's namespace lo keeps only 127.0.0.1/32, so other 127.x go out eth0
//     (to the Pods and to the host); on the host two more specific routes in table local
//     send the slot's range to the bridge, from the host's own address on it, and keep
//     127.(100+slot).0.0/24 (the nodes' and the host's addresses) local.
//
// A Pod's MAC address is derived from its IP, so a Pod re-created with the same address
// (Options.NewIPOnRecreate off) is reached at once, whatever the neighbours' caches hold.

// netnsDir is where iproute2 keeps named network namespaces (ip netns add).
const netnsDir = "/run/netns"

// clusterNet is the cluster's bridge and the host routes to its Pods.
type clusterNet struct {
	slot   slot
	bridge string
	host   netip.Addr // the host's address on the bridge: the source of its traffic to Pods

	mu   sync.Mutex
	next uint64 // names each Pod's namespace and veth
}

// podNet is one Pod's network namespace.
type podNet struct {
	name   string // the namespace's name under /run/netns
	hostIf string // the host's end of the veth pair (a port of the bridge)
	ip     netip.Addr
}

// nsPath is the namespace's file: nsenter --net= and setns take it.
func (p *podNet) nsPath() string { return filepath.Join(netnsDir, p.name) }

func (s slot) bridgeName() string { return fmt.Sprintf("vkfsm-lc%d", s.n) }

// netnsPrefix starts the name of every Pod namespace of the slot; the trailing dash keeps
// slot 1's from matching slot 12's.
func (s slot) netnsPrefix() string { return fmt.Sprintf("vkfsm-lc%d-", s.n) }

// hostIP is the host's address on the cluster's bridge (and the API server's): in the nodes'
// /24, so it stays an address of the machine, and from the Pods' side it is the node.
func (s slot) hostIP() netip.Addr { return netip.AddrFrom4([4]byte{127, byte(100 + s.n), 0, 254}) }

func (s slot) nodePrefix() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{127, byte(100 + s.n), 0, 0}), 24)
}

// newClusterNet sweeps what an earlier owner of the slot left (a crashed run) and creates the
// bridge and the host routes.
func newClusterNet(s slot) (*clusterNet, error) {
	sweepClusterNet(s)
	cn := &clusterNet{slot: s, bridge: s.bridgeName(), host: s.hostIP()}
	mac := fmt.Sprintf("0a:58:7f:%02x:00:fe", 100+s.n)
	if err := runIP("", fmt.Sprintf("link add %s address %s type bridge\n", cn.bridge, mac)); err != nil {
		return nil, err
	}
	if err := writeSysctl("net/ipv4/conf/"+cn.bridge+"/route_localnet", "1"); err != nil {
		cn.close()
		return nil, err
	}
	script := fmt.Sprintf(`link set %[1]s up
route replace local %[2]s dev lo table local
route replace %[3]s dev %[1]s table local src %[4]s
`, cn.bridge, s.nodePrefix(), s.podPrefix(), cn.host)
	if err := runIP("", script); err != nil {
		cn.close()
		return nil, err
	}
	return cn, nil
}

// close removes every Pod namespace of the slot, the bridge and the routes.
func (cn *clusterNet) close() { sweepClusterNet(cn.slot) }

// sweepClusterNet deletes the slot's Pod namespaces (their veth pairs go with them), its
// bridge (the route through it too) and the local route of its nodes' /24. Errors are
// ignored: most of it is usually not there.
func sweepClusterNet(s slot) {
	entries, _ := os.ReadDir(netnsDir)
	var script strings.Builder
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), s.netnsPrefix()) {
			fmt.Fprintf(&script, "netns del %s\n", e.Name())
		}
	}
	fmt.Fprintf(&script, "link del %s\n", s.bridgeName())
	fmt.Fprintf(&script, "route del local %s dev lo table local\n", s.nodePrefix())
	fmt.Fprintf(&script, "route del %s table local\n", s.podPrefix())
	_ = runIP("", script.String())
}

// netLeftovers lists what of the slot's networking still exists.
func netLeftovers(n int) []string {
	s := slot{n: n}
	var left []string
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), s.netnsPrefix()) {
			left = append(left, "network namespace "+e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", s.bridgeName())); err == nil {
		left = append(left, "bridge "+s.bridgeName())
	}
	if out, err := exec.Command("ip", "route", "show", "table", "local", s.nodePrefix().String()).Output(); err == nil && len(bytes.TrimSpace(out)) > 0 {
		left = append(left, "route "+strings.TrimSpace(string(out)))
	}
	return left
}

// addPod creates a Pod's namespace with its lo and its eth0 on the bridge.
func (cn *clusterNet) addPod(ip netip.Addr) (*podNet, error) {
	if !ip.Is4() || !cn.slot.podPrefix().Contains(ip) || cn.slot.nodePrefix().Contains(ip) {
		return nil, fmt.Errorf("pod address %s is outside the Pods' range of %s", ip, cn.slot.podPrefix())
	}
	cn.mu.Lock()
	cn.next++
	seq := cn.next
	cn.mu.Unlock()
	p := &podNet{
		name:   fmt.Sprintf("%s%d", cn.slot.netnsPrefix(), seq),
		hostIf: fmt.Sprintf("vk%dp%x", cn.slot.n, seq),
		ip:     ip,
	}
	b := ip.As4()
	mac := fmt.Sprintf("0a:58:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3])
	host := fmt.Sprintf(`netns add %[1]s
link add %[2]s type veth peer name eth0 address %[3]s netns %[1]s
link set %[2]s master %[4]s up
`, p.name, p.hostIf, mac, cn.bridge)
	if err := runIP("", host); err != nil {
		cn.removePod(p)
		return nil, err
	}
	// Before eth0 carries anything: without it the kernel drops 127/8 packets (and ARP for
	// them) on eth0 as martians.
	err := inNetns(p.nsPath(), func() error {
		for _, conf := range []string{"all", "eth0"} {
			if err := writeSysctl("net/ipv4/conf/"+conf+"/route_localnet", "1"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		cn.removePod(p)
		return nil, err
	}
	// lo comes up with 127.0.0.1/8, whose local route would keep every 127.x inside the
	// Pod; 127.0.0.1/32 leaves the rest of 127/8 to eth0.
	pod := fmt.Sprintf(`link set lo up
addr del 127.0.0.1/8 dev lo
addr add 127.0.0.1/32 dev lo
addr add %[1]s/32 dev eth0
link set eth0 up
route add 127.0.0.0/8 dev eth0 src %[1]s
`, ip)
	if err := runIP(p.name, pod); err != nil {
		cn.removePod(p)
		return nil, err
	}
	return p, nil
}

// removePod deletes the veth pair and the namespace. The namespace itself lives on while a
// process is still in it; the veth goes at once, so the address is free on the bridge.
func (cn *clusterNet) removePod(p *podNet) {
	_ = runIP("", fmt.Sprintf("link del %s\nnetns del %s\n", p.hostIf, p.name))
}

// runIP runs an iproute2 batch, in the named network namespace when netns is not empty. It
// goes on after a failing line (-force) and reports the first failure.
func runIP(netns, script string) error {
	args := []string{"-force", "-batch", "-"}
	if netns != "" {
		args = append([]string{"-n", netns}, args...)
	}
	cmd := exec.Command("ip", args...)
	cmd.Stdin = strings.NewReader(script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %w: %s\nscript:\n%s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()), script)
	}
	return nil
}

// writeSysctl sets a sysctl of the calling thread's network namespace (a path under
// /proc/sys).
func writeSysctl(key, value string) error {
	return os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0o644)
}

// inNetns runs f on an OS thread moved into the network namespace at nsPath: sockets f
// creates belong to that namespace for good, and /proc/sys/net is that namespace's. The
// thread goes back to its own namespace afterwards; if it cannot, it is not handed back to
// the Go scheduler but ends with the goroutine.
func inNetns(nsPath string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer func() { _ = self.Close() }()
		target, err := os.Open(nsPath)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		err = unix.Setns(int(target.Fd()), unix.CLONE_NEWNET)
		_ = target.Close()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering network namespace %s: %w", nsPath, err)
			return
		}
		ferr := f()
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}

// dialInNetns connects from inside the namespace at nsPath, as a process of the Pod would:
// to the Pod's own localhost, for instance.
func dialInNetns(ctx context.Context, nsPath, address string) (net.Conn, error) {
	var conn net.Conn
	err := inNetns(nsPath, func() error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, "tcp", address)
		return err
	})
	if err != nil && conn != nil {
		_ = conn.Close()
		conn = nil
	}
	if conn == nil && err == nil {
		err = errors.New("no connection")
	}
	return conn, err
}
