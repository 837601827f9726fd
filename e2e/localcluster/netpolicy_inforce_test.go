package localcluster

import (
	"net/netip"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// A Pod re-created on its old address with its old labels renders the same rules, keyed by
// address, while its network namespace is new and empty: the rules are not in force until
// they are loaded there (the rebuild used to stop at the equal document, and the replacement
// answered clients its policy refuses).
func TestRulesAreInForceNamespaceByNamespace(t *testing.T) {
	ip := netip.MustParseAddr("127.100.1.3")
	tables := []npTable{{ip: ip, key: "ns/server", body: "chain input {}\n"}}
	np := &netPolicy{inNetns: map[string]string{"/run/netns/vkfsm-lc1-7": tables[0].body}}
	np.applied, np.loaded = npDocument(tables), true

	old := map[types.UID]npRunning{"old": {ip: ip, netns: "/run/netns/vkfsm-lc1-7"}}
	if !np.inForce(tables, old) {
		t.Fatal("the loaded rules of a running Pod are not in force")
	}
	replaced := map[types.UID]npRunning{"new": {ip: ip, netns: "/run/netns/vkfsm-lc1-9"}}
	if np.inForce(tables, replaced) {
		t.Fatal("the same document counted as in force for a Pod whose new network namespace holds no table")
	}
	if want := perNetns(tables, replaced); want["/run/netns/vkfsm-lc1-9"] != tables[0].body {
		t.Fatalf("the replacement's namespace is not given the table: %v", want)
	}
}
