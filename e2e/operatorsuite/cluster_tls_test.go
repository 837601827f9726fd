package operatorsuite

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// A Cluster topology created TLSOnly on Valkey 9.1: the operator forms it over TLS (MEET on
// the TLS port, the bus and replication over TLS, plain closed on every pod), a cluster-aware
// application verifying the CA writes and reads through it, and a reshard to 4 shards under
// that writer (atomic slot migration over TLS) loses no acknowledged write. Oracles:
// valkey-cli --tls --cluster check, plain TCP refused on every pod, the cluster bus on the TLS
// port + 10000, and every key read back by another TLS client. Turning TLS off is refused by
// the API server (the bus cannot be rolled).
func TestAClusterTopologyRunsOverTLSAndReshardsWithoutLosingAWrite(t *testing.T) {
	ns := cl.Namespace(t)
	metricsAddr, token := metricsOperator(t, ns)
	ctx := ctxFor(t, 8*time.Minute)
	ca := tlsSecret(t, ctx, ns, "tlsshop")
	vc := newCluster(ns, "tlsshop", v1alpha1.TopologyCluster, 2)
	vc.Spec.Shards, vc.Spec.Image = 3, "valkey/valkey:9.1"
	vc.Spec.TLS = v1alpha1.TLSSpec{Mode: v1alpha1.TLSOnly, SecretName: "tlsshop-tls"}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "tlsshop", 4*time.Minute, "Steady with 3 shards of 2 over TLS", steadyCluster(3, 2))
	pass := password(t, vc)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range vc.Status.Nodes {
		if c, err := tlsClient(net.JoinHostPort(n.IP, "6379"), pass, nil); err == nil {
			c.Close()
			t.Errorf("%s: plain TCP accepted in TLSOnly", n.Pod)
		}
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(n.IP, "16380"), 2*time.Second); err != nil {
			t.Errorf("%s: no cluster bus on the TLS port + 10000: %v", n.Pod, err)
		} else {
			c.Close()
		}
	}
	tlsClusterCheck(t, caFile, pass, vc.Status.Nodes[0].IP)

	// Every node's certificate names the client Service, which is what an application verifies
	// whichever node a redirection sends it to.
	cfg := ca.ClientConfig("tlsshop." + ns + ".svc")
	// Like an application starting, it tries again while the client Service's endpoints
	// follow the role labels (the CI run was reset once by a pod the Service still listed).
	app := clusterClientWith(t, vk.ClientOption{InitAddress: []string{strings.Replace(clientServiceAddr(t, vc), ":6379", ":6380", 1)}, Password: pass, TLSConfig: cfg})
	const keys = 2000
	writeAcked(ctx, t, app, "tls:", keys)
	w := startWriter(ctx, app, "during")
	vc = get(t, ns, "tlsshop")
	vc.Spec.Shards = 4
	update(t, ctx, vc)
	vc = waitFor(t, ns, "tlsshop", 4*time.Minute, "Steady with 4 shards, slots balanced", func(vc *v1alpha1.ValkeyCluster) bool {
		if !steadyCluster(4, 2)(vc) {
			return false
		}
		for _, sh := range vc.Status.Shards {
			if slotsIn(sh.Slots) != 4096 {
				return false
			}
		}
		return true
	})
	reader := clusterClientWith(t, vk.ClientOption{InitAddress: []string{net.JoinHostPort(vc.Status.Nodes[len(vc.Status.Nodes)-1].IP, "6380")}, Password: pass, TLSConfig: cfg})
	lost, acked := w.lost(t, reader)
	if lost > 0 || acked == 0 {
		t.Fatalf("%d of %d acknowledged writes lost while resharding over TLS:\n%s", lost, acked, summary(vc))
	}
	readAll(ctx, t, reader, "tls:", keys)
	tlsClusterCheck(t, caFile, pass, vc.Status.Nodes[0].IP)
	t.Logf("resharded 3 → 4 shards over TLS under a writer: %d acknowledged writes, none lost", acked)

	// The cluster-mode and certificate metrics the chart's alerts and dashboard query are in a
	// real scrape: every slot ok on every node, each pod's certificate expiry.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		s := scrapeMetrics(t, metricsAddr, token)
		ok := s.of("valkey_cluster_slots_ok", "namespace", ns, "cluster", "tlsshop")
		expiry := s.of("valkey_operator_tls_certificate_expiry_timestamp_seconds", "namespace", ns, "cluster", "tlsshop")
		allOK := len(ok) == 8
		for _, smp := range ok {
			allOK = allOK && smp.Value == 16384
		}
		if allOK && len(expiry) == 8 {
			checkQueriedMetrics(t, s, func(name string) bool {
				return strings.HasPrefix(name, "valkey_cluster_") || name == "valkey_operator_tls_certificate_expiry_timestamp_seconds"
			})
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster metrics: slots ok %v, certificate expiry %v", ok, expiry)
		}
	}

	vc = get(t, ns, "tlsshop")
	vc.Spec.TLS = v1alpha1.TLSSpec{Mode: v1alpha1.TLSDisabled}
	if err := k.Update(ctx, vc); err == nil || !strings.Contains(err.Error(), "cannot turn TLS on or off once created") {
		t.Errorf("turning a Cluster topology's TLS off: %v", err)
	}
}

// tlsClusterCheck is clusterCheck over TLS, verifying the nodes against the CA in caFile.
func tlsClusterCheck(t *testing.T, caFile, pass, ip string) {
	t.Helper()
	valkeyCLICheck(t, pass, net.JoinHostPort(ip, "6380"), "", "--tls", "--cacert", caFile)
}
