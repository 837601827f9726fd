package v1alpha1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestAV1alpha1WriteTheSentinelRulesRefuseIsRefused: a Sentinel topology read through v1alpha1
// shows as Replication; written back with what v1beta1's rules refuse for this topology (TLS,
// replica-priority in config, no replica), its conversion fails with the rule's words, so the
// API server refuses the write. Written back unchanged, or changed within the rules, it
// converts to the same Sentinel topology.
func TestAV1alpha1WriteTheSentinelRulesRefuseIsRefused(t *testing.T) {
	two := int32(2)
	hub := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: v1beta1.ValkeyClusterSpec{
		Topology: v1beta1.TopologySentinel, Replicas: &two, Sentinel: &v1beta1.SentinelSpec{Replicas: 3},
	}}
	read := func() *ValkeyCluster {
		var spoke ValkeyCluster
		if err := spoke.ConvertFrom(hub.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		if spoke.Spec.Topology != TopologyReplication {
			t.Fatalf("v1alpha1 shows topology %q, want Replication", spoke.Spec.Topology)
		}
		return &spoke
	}
	var back v1beta1.ValkeyCluster
	if err := read().ConvertTo(&back); err != nil || back.Spec.Topology != v1beta1.TopologySentinel {
		t.Fatalf("written back unchanged: %v, topology %q", err, back.Spec.Topology)
	}
	within := read()
	within.Spec.Config = map[string]ConfigValue{"maxmemory": "100mb"}
	if err := within.ConvertTo(&back); err != nil {
		t.Fatalf("a change within the rules: %v", err)
	}
	for name, c := range map[string]struct {
		change func(*ValkeyCluster)
		want   string
	}{
		"TLS":              {func(vc *ValkeyCluster) { vc.Spec.TLS.Mode = TLSBoth }, "does not run TLS yet"},
		"replica-priority": {func(vc *ValkeyCluster) { vc.Spec.Config = map[string]ConfigValue{"replica-priority": "1"} }, "config sets replica-priority"},
		"no replica":       {func(vc *ValkeyCluster) { vc.Spec.Replicas = 1 }, "at least one replica"},
	} {
		spoke := read()
		c.change(spoke)
		err := spoke.ConvertTo(&v1beta1.ValkeyCluster{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "Sentinel topology") {
			t.Errorf("%s: %v, want the refusal saying %q", name, err, c.want)
		}
	}
}
