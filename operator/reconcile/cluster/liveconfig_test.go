package cluster

import (
	"errors"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestEachNodeGetsTheDirectivesOfTheVersionItReports: in one cluster half-way through a roll
// from 8.0 to 9.1, the live set of each node follows the version it reports and whether its
// pod serves TLS, on top of spec.config's live directives; spec.config's own value of a
// versioned directive wins (it is in valkey.conf, so it is not set live); a Cluster topology
// never gets Valkey's own failover on SIGTERM. The shared valkey.conf carries none of them.
func TestEachNodeGetsTheDirectivesOfTheVersionItReports(t *testing.T) {
	build := func(topology v1beta1.Topology, config map[string]v1beta1.ConfigValue) (*v1beta1.ValkeyCluster, *world) {
		vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
		vc.Spec.Topology = topology
		vc.Spec.Config = config
		vc.Spec.TLS.Mode = v1beta1.TLSPlainAndTLS
		vc.Spec.TLS.SecretRef = &v1beta1.SecretRef{Name: "tls"}
		v1beta1.SetDefaults(&vc.Spec)
		w := &world{desired: kube.Build(vc, metav1.OwnerReference{}), pods: map[string]*corev1.Pod{}}
		for _, name := range []string{"old", "new", "new-plain"} {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
			if name != "new-plain" {
				pod.Annotations[kube.AnnotationTLS] = string(valkey.TLSBoth)
			}
			w.pods[name] = pod
		}
		for _, forbidden := range []string{valkey.ShutdownOnSigterm, valkey.TLSAutoReloadInterval} {
			if conf := w.desired.Config.Data["valkey.conf"]; strings.Contains(conf, forbidden) && config == nil {
				t.Fatalf("valkey.conf renders %s, which 8.0 refuses at start:\n%s", forbidden, conf)
			}
		}
		return vc, w
	}
	node := func(name, version string) machine.Node {
		return machine.Node{Name: name, Reachable: true, Valkey: machine.Valkey{Version: version, RunID: name}}
	}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}

	vc, w := build(v1beta1.TopologyReplication, map[string]v1beta1.ConfigValue{"hz": "20"})
	base := w.desired.Live
	if base["hz"] != "20" {
		t.Fatalf("spec.config's live hz is not in the desired live set: %v", base)
	}
	for _, c := range []struct {
		n    machine.Node
		want map[string]string
	}{
		{node("old", "8.0.1"), base},
		{node("new", "9.1.2"), with(base, valkey.ShutdownOnSigterm, "failover", valkey.TLSAutoReloadInterval, "60")},
		{node("new-plain", "9.1.2"), with(base, valkey.ShutdownOnSigterm, "failover")},
		{node("new", "9.0.0"), with(base, valkey.ShutdownOnSigterm, "failover")},
	} {
		if got := liveFor(vc, w, c.n); !maps.Equal(got, c.want) {
			t.Errorf("replication, %s on %s: %v, want %v", c.n.Name, c.n.Valkey.Version, got, c.want)
		}
	}
	w.tlsErr = errors.New("TLS Secret tls: the certificate does not name the cluster's pods")
	if got := liveFor(vc, w, node("new", "9.1.2")); got[valkey.TLSAutoReloadInterval] != "0" {
		t.Errorf("the TLS Secret refused: %v, want the reload held (interval 0)", got)
	}
	w.tlsErr = nil
	if base[valkey.ShutdownOnSigterm] != "" {
		t.Fatal("liveFor changed the cluster's desired live set")
	}

	vc, w = build(v1beta1.TopologyReplication, map[string]v1beta1.ConfigValue{"Shutdown-On-Sigterm": "default", "hz": "20"})
	if got := liveFor(vc, w, node("new", "9.1.2")); got[valkey.ShutdownOnSigterm] != "" || got[valkey.TLSAutoReloadInterval] != "60" {
		t.Errorf("spec.config sets shutdown-on-sigterm: the live set %v overrides it", got)
	}
	if conf := w.desired.Config.Data["valkey.conf"]; !strings.Contains(conf, "Shutdown-On-Sigterm default\n") {
		t.Errorf("the user's shutdown-on-sigterm is not in valkey.conf:\n%s", conf)
	}

	vc, w = build(v1beta1.TopologyCluster, nil)
	if got := liveFor(vc, w, node("new", "9.1.2")); !maps.Equal(got, with(w.desired.Live, valkey.TLSAutoReloadInterval, "60")) {
		t.Errorf("cluster topology, 9.1 with TLS: %v, want the reload interval and no failover on SIGTERM", got)
	}
}
