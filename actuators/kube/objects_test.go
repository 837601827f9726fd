package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

func buildWith(config map[string]v1beta1.ConfigValue) Desired {
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1beta1.ValkeyClusterSpec{Config: config}}
	vc = vc.DeepCopy()
	v1beta1.SetDefaults(&vc.Spec)
	return Build(vc, metav1.OwnerReference{Name: "c"})
}

// A directive Valkey applies at run time changes the live set, not the revision: changing it
// rolls nothing. Any other directive changes the revision.
func TestOnlyRestartDirectivesChangeTheRevision(t *testing.T) {
	a := buildWith(map[string]v1beta1.ConfigValue{"slowlog-max-len": "128", "databases": "16"})
	b := buildWith(map[string]v1beta1.ConfigValue{"slowlog-max-len": "256", "databases": "16"})
	c := buildWith(map[string]v1beta1.ConfigValue{"slowlog-max-len": "256", "databases": "32"})
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
		profile v1beta1.Profile
		config  map[string]v1beta1.ConfigValue
		want    bool
	}{
		{v1beta1.ProfileDurable, nil, false},
		{v1beta1.ProfileDurable, map[string]v1beta1.ConfigValue{"appendfsync": "everysec"}, false},
		{v1beta1.ProfileDurable, map[string]v1beta1.ConfigValue{"appendfsync": "no"}, false},
		{v1beta1.ProfileDurable, map[string]v1beta1.ConfigValue{"appendfsync": "always"}, true},
		{v1beta1.ProfileDurable, map[string]v1beta1.ConfigValue{"APPENDFSYNC": " Always"}, true},
		{v1beta1.ProfileCache, map[string]v1beta1.ConfigValue{"appendfsync": "always"}, false},
	}
	for _, c := range cases {
		vc := &v1beta1.ValkeyCluster{Spec: v1beta1.ValkeyClusterSpec{Profile: c.profile, Config: c.config}}
		if got := FsyncAlways(vc); got != c.want {
			t.Errorf("%s %v: FsyncAlways = %v, want %v", c.profile, c.config, got, c.want)
		}
	}
}

// maxmemory derived from the memory limit is each pod's own (a server argument of the
// template, which rolls), never a live directive set on every node at once; set in
// spec.config it is the user's value for every node, applied live.
func TestMaxMemoryFromTheLimitChangesWithThePod(t *testing.T) {
	build := func(limit string, config map[string]v1beta1.ConfigValue) Desired {
		vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1beta1.ValkeyClusterSpec{Config: config}}
		vc.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)}
		v1beta1.SetDefaults(&vc.Spec)
		return Build(vc, metav1.OwnerReference{Name: "c"})
	}
	small, large := build("100Mi", nil), build("200Mi", nil)
	args := strings.Join(small.StatefulSet.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--maxmemory 62914560") {
		t.Fatalf("want 60%% of 100Mi as the pod's argument, got args %q", args)
	}
	if _, ok := small.Live["maxmemory"]; ok || strings.Contains(small.Config.Data["valkey.conf"], "maxmemory ") {
		t.Fatalf("maxmemory from the limit must not be live nor in the shared config: live %v", small.Live)
	}
	if small.Revision == large.Revision {
		t.Fatal("a new memory limit is a new revision: each pod gets its maxmemory when it rolls")
	}
	set := build("100Mi", map[string]v1beta1.ConfigValue{"maxmemory": "50mb"})
	if set.Live["maxmemory"] != "50mb" || strings.Contains(strings.Join(set.StatefulSet.Spec.Template.Spec.Containers[0].Args, " "), "--maxmemory") {
		t.Fatalf("maxmemory from spec.config is live and not an argument: live %v", set.Live)
	}
}

// No password on a command line, and none in the container's environment: the readiness probe
// authenticates as its own user (PING only, a password that never rotates), reading the password
// from the auth Secret's probe key, mounted beside the users' file, each time it runs (into
// REDISCLI_AUTH, valkey-cli's variable), never as an argument every process of the node can read.
// The operator's password is not in the pod at all: a password resolved into env when the
// container started went stale after a rotation retired it (WRONGPASS, every pod NotReady).
func TestNoPasswordOnACommandLine(t *testing.T) {
	for _, tls := range []v1beta1.TLSMode{v1beta1.TLSDisabled, v1beta1.TLSPlainAndTLS, v1beta1.TLSOnly} {
		d := buildTLS(tls)
		spec := d.StatefulSet.Spec.Template.Spec
		c := spec.Containers[0]
		probe := strings.Join(c.ReadinessProbe.Exec.Command, " ")
		preStop := strings.Join(c.Lifecycle.PreStop.Exec.Command, " ")
		for _, bad := range []string{"--pass", " -a ", "PASSWORD", "operator"} {
			if strings.Contains(probe, bad) || strings.Contains(preStop, bad) || strings.Contains(strings.Join(append(c.Command, c.Args...), " "), bad) {
				t.Errorf("tls %q: a password or the operator's user reaches a command line (%q): probe %q, preStop %q, args %q", tls, bad, probe, preStop, c.Args)
			}
		}
		if !strings.Contains(preStop, "read -r REDISCLI_AUTH < /etc/valkey/auth/"+KeyProbePassword+";") || !strings.Contains(preStop, "--user probe role") {
			t.Errorf("tls %q: the preStop hook must ask ROLE as the probe user with the password read from the mounted file: %q", tls, preStop)
		}
		if tls == v1beta1.TLSOnly && !strings.Contains(preStop, "--tls") {
			t.Errorf("tls %q: the preStop hook does not speak TLS: %q", tls, preStop)
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil || e.Name == "REDISCLI_AUTH" {
				t.Errorf("tls %q: env %s comes from a Secret: resolved once when the container starts, it goes stale", tls, e.Name)
			}
		}
		if len(c.EnvFrom) > 0 {
			t.Errorf("tls %q: envFrom %v", tls, c.EnvFrom)
		}
		if !strings.Contains(probe, "read -r REDISCLI_AUTH < /etc/valkey/auth/"+KeyProbePassword+";") || !strings.Contains(probe, "--user probe ping") {
			t.Errorf("tls %q: the probe must PING as the probe user with the password read from the mounted file: %q", tls, probe)
		}
		// The auth volume: the users' file (hashes, and masterauth) and the probe's password,
		// no other password.
		for _, v := range spec.Volumes {
			if v.Secret == nil || v.Secret.SecretName != d.Names.Auth {
				continue
			}
			var keys []string
			for _, it := range v.Secret.Items {
				keys = append(keys, it.Key)
			}
			if strings.Join(keys, ",") != "auth.conf,"+KeyProbePassword || *v.Secret.DefaultMode != 0o400 {
				t.Errorf("tls %q: the auth volume projects %v (mode %o); want auth.conf and %s only, owner-readable", tls, keys, *v.Secret.DefaultMode, KeyProbePassword)
			}
		}
	}
}
