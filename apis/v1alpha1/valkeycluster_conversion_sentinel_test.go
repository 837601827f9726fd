package v1alpha1

import (
	"strconv"
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
	two, off := int32(2), false
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
		"auth turned off":  {func(vc *ValkeyCluster) { vc.Spec.Auth.Enabled = &off }, "auth.enabled cannot change"},
	} {
		spoke := read()
		c.change(spoke)
		err := spoke.ConvertTo(&v1beta1.ValkeyCluster{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "Sentinel topology") {
			t.Errorf("%s: %v, want the refusal saying %q", name, err, c.want)
		}
	}
}

// TestAV1alpha1WriteKeepsTheSentinelsAuthSetting: auth.enabled of a Sentinel topology, which
// v1beta1's rule keeps as created, is kept through v1alpha1 too, either way: a cluster created
// without auth read and written back unchanged converts; with auth turned on it is refused, as
// v1beta1 refuses it. A Replication topology's may change (the rule is the Sentinel
// topology's), and a v1alpha1 object written without the annotation (a create) is not
// compared with anything.
func TestAV1alpha1WriteKeepsTheSentinelsAuthSetting(t *testing.T) {
	off, on := false, true
	for _, c := range []struct {
		topology v1beta1.Topology
		was      *bool
		now      *bool
		refused  bool
	}{
		{v1beta1.TopologySentinel, &off, &off, false},
		{v1beta1.TopologySentinel, &off, &on, true},
		{v1beta1.TopologySentinel, &off, nil, true}, // unset is on
		{v1beta1.TopologySentinel, nil, &on, false},
		{v1beta1.TopologySentinel, nil, &off, true},
		{v1beta1.TopologyReplication, nil, &off, false},
	} {
		spec := v1beta1.ValkeyClusterSpec{Topology: c.topology, Auth: v1beta1.AuthSpec{Enabled: c.was}}
		if c.topology == v1beta1.TopologySentinel {
			spec.Sentinel = &v1beta1.SentinelSpec{Replicas: 3}
		}
		var spoke ValkeyCluster
		if err := spoke.ConvertFrom(&v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: spec}); err != nil {
			t.Fatal(err)
		}
		spoke.Spec.Auth.Enabled = c.now
		err := spoke.ConvertTo(&v1beta1.ValkeyCluster{})
		if refused := err != nil && strings.Contains(err.Error(), "auth.enabled cannot change"); refused != c.refused || (err != nil && !refused) {
			t.Errorf("%s, auth.enabled %v then %v: %v, want refused %v", c.topology, ptrText(c.was), ptrText(c.now), err, c.refused)
		}
	}
	created := &ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "ns"}, Spec: ValkeyClusterSpec{Auth: AuthSpec{Enabled: &off}}}
	if err := created.ConvertTo(&v1beta1.ValkeyCluster{}); err != nil {
		t.Errorf("a v1alpha1 create without auth: %v", err)
	}
}

func ptrText(b *bool) string {
	if b == nil {
		return "unset"
	}
	return strconv.FormatBool(*b)
}
