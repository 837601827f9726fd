package v1beta1

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestAccessorsDefaultSafely(t *testing.T) {
	if !(AuthSpec{}).IsEnabled() || (AuthSpec{Enabled: ptr.To(false)}).IsEnabled() || !(AuthSpec{Enabled: ptr.To(true)}).IsEnabled() {
		t.Error("AuthSpec.IsEnabled: unset must mean enabled, and a set value must win")
	}
	if !(PodDisruptionBudgetSpec{}).IsEnabled() || (PodDisruptionBudgetSpec{Enabled: ptr.To(false)}).IsEnabled() {
		t.Error("PodDisruptionBudgetSpec.IsEnabled: unset must mean enabled, and a set value must win")
	}
	if got := (&ValkeyClusterSpec{Profile: ProfileCache}).StorageSizeOrDefault(); got.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("StorageSizeOrDefault of unset Cache = %s, want 1Gi", got.String())
	}
	if got := (&ValkeyClusterSpec{}).StorageSizeOrDefault(); got.Cmp(resource.MustParse("10Gi")) != 0 {
		t.Errorf("StorageSizeOrDefault of unset Durable = %s, want 10Gi", got.String())
	}
	size := resource.MustParse("3Gi")
	s := ValkeyClusterSpec{Storage: StorageSpec{Size: &size}}
	got := s.StorageSizeOrDefault()
	got.Add(resource.MustParse("1Gi"))
	if s.Storage.Size.Cmp(resource.MustParse("3Gi")) != 0 {
		t.Error("StorageSizeOrDefault returned the spec's own quantity: changing the result changed the spec")
	}
	if got := (SecretKeyRef{Name: "s"}).KeyOrDefault(); got != "password" {
		t.Errorf("KeyOrDefault = %q", got)
	}
	if got := (SecretKeyRef{Name: "s", Key: "k"}).KeyOrDefault(); got != "k" {
		t.Errorf("KeyOrDefault = %q", got)
	}
}

func TestMaxMemoryBytes(t *testing.T) {
	cases := []struct {
		limit string
		want  int64
		ok    bool
	}{
		{"1Gi", 644245094, true}, // 1073741824 * 0.6 = 644245094.4
		{"100", 60, true},
		{"101", 60, true}, // rounded down
		{"512Mi", 322122547, true},
		{"1G", 600000000, true},
		{"0", 0, false},
		{"-1Gi", 0, false},
	}
	for _, c := range cases {
		got, ok := MaxMemoryBytes(resource.MustParse(c.limit))
		if got != c.want || ok != c.ok {
			t.Errorf("MaxMemoryBytes(%s) = %d, %v; want %d, %v", c.limit, got, ok, c.want, c.ok)
		}
	}
	// No overflow near the largest limit a Quantity holds.
	huge := *resource.NewQuantity(math.MaxInt64, resource.BinarySI)
	got, ok := MaxMemoryBytes(huge)
	if want := int64(math.MaxInt64 / 100 * 60); !ok || got < want || got > want+60 {
		t.Errorf("MaxMemoryBytes(MaxInt64) = %d, %v; want about %d", got, ok, want)
	}
}

func TestMaxMemory(t *testing.T) {
	withLimit := func(limit string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)}}
	}
	cases := []struct {
		name string
		spec ValkeyClusterSpec
		want string
		ok   bool
	}{
		{"no limit, no config", ValkeyClusterSpec{}, "", false},
		{"only a request", ValkeyClusterSpec{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}, "", false},
		{"cpu limit only", ValkeyClusterSpec{Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}, "", false},
		{"60% of the limit", ValkeyClusterSpec{Resources: withLimit("1Gi")}, "644245094", true},
		{"config wins", ValkeyClusterSpec{Resources: withLimit("1Gi"), Config: map[string]ConfigValue{"maxmemory": "100mb"}}, "100mb", true},
		{"config in other case wins", ValkeyClusterSpec{Resources: withLimit("1Gi"), Config: map[string]ConfigValue{"MaxMemory": "100mb"}}, "100mb", true},
		{"config without limit", ValkeyClusterSpec{Config: map[string]ConfigValue{"maxmemory": "0"}}, "0", true},
	}
	for _, c := range cases {
		got, ok := MaxMemory(&c.spec)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: MaxMemory = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestProfileDirectives(t *testing.T) {
	cache, durable := ProfileDirectives(ProfileCache), ProfileDirectives(ProfileDurable)
	if cache["maxmemory-policy"] != "allkeys-lru" || cache["appendonly"] != "no" || cache["save"] != `""` {
		t.Errorf("Cache directives = %v: want allkeys-lru and no persistence", cache)
	}
	if durable["maxmemory-policy"] != "noeviction" || durable["appendonly"] != "yes" || durable["save"] == `""` || durable["save"] == "" {
		t.Errorf("Durable directives = %v: want noeviction, AOF and RDB", durable)
	}
	for _, p := range []Profile{ProfileCache, ProfileDurable} {
		for name := range ProfileDirectives(p) {
			// config must not be able to contradict what the profile promises.
			if !IsOperatorOwned(name) {
				t.Errorf("profile %s sets %s, which spec.config could override: add it to OperatorOwnedDirectives", p, name)
			}
		}
	}
	if ProfileDirectives("Sharded") != nil {
		t.Error("an unknown profile has directives")
	}
	// Each call returns a fresh map the caller may change.
	ProfileDirectives(ProfileCache)["appendonly"] = "yes"
	if ProfileDirectives(ProfileCache)["appendonly"] != "no" {
		t.Error("ProfileDirectives returned a shared map")
	}
}

func TestDefaultTopologySpreadConstraints(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": "vk"}}
	got := DefaultTopologySpreadConstraints(sel)
	if len(got) != 2 || got[0].TopologyKey != "topology.kubernetes.io/zone" || got[1].TopologyKey != "kubernetes.io/hostname" {
		t.Fatalf("constraints = %+v: want zone then hostname", got)
	}
	for _, c := range got {
		if c.MaxSkew != 1 || c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			t.Errorf("%s: maxSkew %d, %s; want 1, ScheduleAnyway", c.TopologyKey, c.MaxSkew, c.WhenUnsatisfiable)
		}
		if !equality.Semantic.DeepEqual(c.LabelSelector, sel) || c.LabelSelector == sel {
			t.Errorf("%s: label selector %v is not a copy of %v", c.TopologyKey, c.LabelSelector, sel)
		}
	}
}

func TestMinReplicasToWriteDefaultsByProfileAndTopology(t *testing.T) {
	for _, c := range []struct {
		spec ValkeyClusterSpec
		want int32
	}{
		{ValkeyClusterSpec{Topology: TopologyReplication, Profile: ProfileDurable, Replicas: ptr.To(int32(2))}, 1},
		{ValkeyClusterSpec{Topology: TopologyReplication, Profile: ProfileDurable}, 1},
		{ValkeyClusterSpec{Topology: TopologyReplication, Profile: ProfileCache, Replicas: ptr.To(int32(2))}, 0},
		{ValkeyClusterSpec{Topology: TopologyStandalone, Profile: ProfileDurable}, 0},
		{ValkeyClusterSpec{Topology: TopologyReplication, Profile: ProfileDurable, Replicas: ptr.To(int32(0))}, 0},
		{ValkeyClusterSpec{Topology: TopologyReplication, Profile: ProfileCache, Replicas: ptr.To(int32(2)), Durability: DurabilitySpec{MinReplicasToWrite: ptr.To(int32(2))}}, 2},
	} {
		if got := MinReplicasToWrite(&c.spec); got != c.want {
			t.Errorf("MinReplicasToWrite(%+v) = %d, want %d", c.spec, got, c.want)
		}
	}
}

// A Standalone cluster is one pod whatever spec.replicas holds (a v1alpha1 cluster stored
// its CRD default there); the other topologies run a primary and its replicas.
func TestPodsPerShard(t *testing.T) {
	for _, c := range []struct {
		spec ValkeyClusterSpec
		want int32
	}{
		{ValkeyClusterSpec{Topology: TopologyStandalone}, 1},
		{ValkeyClusterSpec{Topology: TopologyStandalone, Replicas: ptr.To(int32(2))}, 1},
		{ValkeyClusterSpec{Topology: TopologyReplication}, 2},
		{ValkeyClusterSpec{}, 2},
		{ValkeyClusterSpec{Topology: TopologyReplication, Replicas: ptr.To(int32(0))}, 1},
		{ValkeyClusterSpec{Topology: TopologyCluster, Replicas: ptr.To(int32(2))}, 3},
	} {
		if got := c.spec.PodsPerShard(); got != c.want {
			t.Errorf("PodsPerShard(%+v) = %d, want %d", c.spec, got, c.want)
		}
	}
}
