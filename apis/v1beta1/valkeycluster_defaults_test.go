package v1beta1

import (
	"testing"

	"k8s.io/utils/ptr"
)

func TestSetDefaultsByTopologyAndProfile(t *testing.T) {
	cases := []struct {
		spec     ValkeyClusterSpec
		replicas int32
		shards   int32
		storage  string
	}{
		{spec: ValkeyClusterSpec{}, replicas: 1, storage: "10Gi"},
		{spec: ValkeyClusterSpec{Topology: TopologyStandalone, Profile: ProfileCache}, replicas: 0, storage: "1Gi"},
		{spec: ValkeyClusterSpec{Topology: TopologyCluster}, replicas: 1, shards: 3, storage: "10Gi"},
		{spec: ValkeyClusterSpec{Topology: TopologyCluster, Shards: 5, Replicas: ptr.To(int32(2))}, replicas: 2, shards: 5, storage: "10Gi"},
	}
	for _, c := range cases {
		s := c.spec.DeepCopy()
		SetDefaults(s)
		if *s.Replicas != c.replicas || s.Shards != c.shards || s.Storage.Size.String() != c.storage {
			t.Errorf("%+v defaulted to replicas %d, shards %d, storage %s; want %d, %d, %s",
				c.spec, *s.Replicas, s.Shards, s.Storage.Size, c.replicas, c.shards, c.storage)
		}
		if s.Auth.Enabled == nil || !*s.Auth.Enabled || s.TLS.Mode != TLSDisabled || s.Image != DefaultImage {
			t.Errorf("%+v: auth %v, tls %q, image %q", c.spec, s.Auth.Enabled, s.TLS.Mode, s.Image)
		}
	}
}

func TestSetDefaultsKeepsWhatIsSet(t *testing.T) {
	s := &ValkeyClusterSpec{Replicas: ptr.To(int32(0)), Auth: AuthSpec{Enabled: ptr.To(false)},
		Service: &ServiceSpec{Type: "LoadBalancer"}}
	SetDefaults(s)
	if *s.Replicas != 0 || *s.Auth.Enabled || s.Service.Type != "LoadBalancer" {
		t.Errorf("SetDefaults overrode a set value: replicas %d, auth %v, service %q", *s.Replicas, *s.Auth.Enabled, s.Service.Type)
	}
}
