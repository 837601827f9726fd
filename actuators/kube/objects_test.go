package kube

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

func buildWith(config map[string]v1alpha1.ConfigValue) Desired {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1alpha1.ValkeyClusterSpec{Config: config}}
	vc = vc.DeepCopy()
	v1alpha1.SetDefaults(&vc.Spec)
	return Build(vc, metav1.OwnerReference{Name: "c"})
}

// A directive Valkey applies at run time changes the live set, not the revision: changing it
// rolls nothing. Any other directive changes the revision.
func TestOnlyRestartDirectivesChangeTheRevision(t *testing.T) {
	a := buildWith(map[string]v1alpha1.ConfigValue{"slowlog-max-len": "128", "databases": "16"})
	b := buildWith(map[string]v1alpha1.ConfigValue{"slowlog-max-len": "256", "databases": "16"})
	c := buildWith(map[string]v1alpha1.ConfigValue{"slowlog-max-len": "256", "databases": "32"})
	if a.Revision != b.Revision {
		t.Fatalf("slowlog-max-len is live: the revision must not change (%s, %s)", a.Revision, b.Revision)
	}
	if b.Live["slowlog-max-len"] != "256" {
		t.Fatalf("live set: %v", b.Live)
	}
	if b.Revision == c.Revision {
		t.Fatal("databases needs a restart: the revision must change")
	}
	if a.Config.Data["valkey.conf"] == b.Config.Data["valkey.conf"] {
		t.Fatal("the ConfigMap still carries live directives, for processes that start later")
	}
}

// Only appendfsync always makes a restarted writer's file complete; everysec (the default),
// no and a Cache cluster (no append-only file) do not.
func TestFsyncAlwaysOnlyWhenEveryWriteIsFsynced(t *testing.T) {
	cases := []struct {
		profile v1alpha1.Profile
		config  map[string]v1alpha1.ConfigValue
		want    bool
	}{
		{v1alpha1.ProfileDurable, nil, false},
		{v1alpha1.ProfileDurable, map[string]v1alpha1.ConfigValue{"appendfsync": "everysec"}, false},
		{v1alpha1.ProfileDurable, map[string]v1alpha1.ConfigValue{"appendfsync": "no"}, false},
		{v1alpha1.ProfileDurable, map[string]v1alpha1.ConfigValue{"appendfsync": "always"}, true},
		{v1alpha1.ProfileDurable, map[string]v1alpha1.ConfigValue{"APPENDFSYNC": " Always"}, true},
		{v1alpha1.ProfileCache, map[string]v1alpha1.ConfigValue{"appendfsync": "always"}, false},
	}
	for _, c := range cases {
		vc := &v1alpha1.ValkeyCluster{Spec: v1alpha1.ValkeyClusterSpec{Profile: c.profile, Config: c.config}}
		if got := FsyncAlways(vc); got != c.want {
			t.Errorf("%s %v: FsyncAlways = %v, want %v", c.profile, c.config, got, c.want)
		}
	}
}
