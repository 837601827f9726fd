package operatorsuite

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestAV1alpha1WriteOfWhatTheSentinelRulesRefuseIsRefused: a Sentinel topology created through
// v1beta1 and read through v1alpha1 (as Replication, the API server converting it through the
// operator's conversion webhook) cannot be written back with TLS, replica-priority in config or
// no replica: the real API server refuses each write with v1beta1's words, and the stored
// object is unchanged. A write within the rules goes through and keeps the topology.
func TestAV1alpha1WriteOfWhatTheSentinelRulesRefuseIsRefused(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, time.Minute)
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old-client"}, Spec: v1beta1.ValkeyClusterSpec{
		Topology: v1beta1.TopologySentinel, Replicas: ptrTo(int32(2)), Sentinel: &v1beta1.SentinelSpec{Replicas: 3},
	}}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(vc)
	for name, c := range map[string]struct {
		change func(*v1alpha1.ValkeyCluster)
		want   string
	}{
		"TLS": {func(vc *v1alpha1.ValkeyCluster) {
			vc.Spec.TLS.Mode, vc.Spec.TLS.SecretName = v1alpha1.TLSBoth, "old-client-tls"
		}, "does not run TLS yet"},
		"replica-priority": {func(vc *v1alpha1.ValkeyCluster) {
			vc.Spec.Config = map[string]v1alpha1.ConfigValue{"replica-priority": "1"}
		}, "config sets replica-priority"},
		"no replica": {func(vc *v1alpha1.ValkeyCluster) { vc.Spec.Replicas = 1 }, "at least one replica"},
	} {
		var old v1alpha1.ValkeyCluster
		if err := k.Get(ctx, key, &old); err != nil {
			t.Fatal(err)
		}
		if old.Spec.Topology != v1alpha1.TopologyReplication {
			t.Fatalf("v1alpha1 shows topology %q, want Replication", old.Spec.Topology)
		}
		c.change(&old)
		err := k.Update(ctx, &old)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s through v1alpha1: %v, want the API server to refuse it saying %q", name, err, c.want)
		}
	}
	var stored v1beta1.ValkeyCluster
	if err := k.Get(ctx, key, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Spec.TLS.Mode != "" && stored.Spec.TLS.Mode != v1beta1.TLSDisabled || len(stored.Spec.Config) > 0 || *stored.Spec.Replicas != 2 {
		t.Fatalf("a refused write changed the stored object: %+v", stored.Spec)
	}

	var ok v1alpha1.ValkeyCluster
	if err := k.Get(ctx, key, &ok); err != nil {
		t.Fatal(err)
	}
	ok.Spec.Config = map[string]v1alpha1.ConfigValue{"maxmemory": "100mb"}
	if err := k.Update(ctx, &ok); err != nil {
		t.Fatalf("a write within the rules through v1alpha1: %v", err)
	}
	if err := k.Get(ctx, key, &stored); err != nil || stored.Spec.Topology != v1beta1.TopologySentinel || stored.Spec.Config["maxmemory"] != "100mb" {
		t.Fatalf("after a write within the rules: %v, topology %q, config %v", err, stored.Spec.Topology, stored.Spec.Config)
	}
}
