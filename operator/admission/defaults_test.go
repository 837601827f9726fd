package admission_test

import (
	"context"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// What is stored after a create is the defaulted spec: replicas by topology, shards for
// Cluster, the volume's size by profile; the scale subresource reads the same count.
func TestDefaultsAreStoredAtAdmission(t *testing.T) {
	c, ns, _ := admin(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		spec     v1beta1.ValkeyClusterSpec
		replicas int32
		shards   int32
		size     string
	}{
		{"standalone", v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologyStandalone}, 0, 0, "10Gi"},
		{"replication", v1beta1.ValkeyClusterSpec{}, 1, 0, "10Gi"},
		{"sharded", v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologyCluster}, 1, 3, "10Gi"},
		{"cache", v1beta1.ValkeyClusterSpec{Profile: v1beta1.ProfileCache}, 1, 0, "1Gi"},
	} {
		vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns}, Spec: tc.spec}
		if err := c.Create(ctx, vc); err != nil {
			t.Fatal(err)
		}
		var got v1beta1.ValkeyCluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(vc), &got); err != nil {
			t.Fatal(err)
		}
		if r := got.Spec.Replicas; r == nil || *r != tc.replicas {
			t.Errorf("%s: stored replicas %v, want %d", tc.name, ptr.Deref(r, -1), tc.replicas)
		}
		if got.Spec.Shards != tc.shards {
			t.Errorf("%s: stored shards %d, want %d", tc.name, got.Spec.Shards, tc.shards)
		}
		if s := got.Spec.Storage.Size; s == nil || s.Cmp(resource.MustParse(tc.size)) != 0 {
			t.Errorf("%s: stored storage.size %v, want %s", tc.name, s, tc.size)
		}
		if got.Spec.Failover.ProbeIntervalSeconds != 1 || got.Spec.Auth.Enabled == nil || !*got.Spec.Auth.Enabled {
			t.Errorf("%s: stored failover %+v, auth.enabled %v: want the CRD's defaults too", tc.name, got.Spec.Failover, got.Spec.Auth.Enabled)
		}
		var scale autoscalingv1.Scale
		if err := c.SubResource("scale").Get(ctx, &got, &scale); err != nil {
			t.Fatal(err)
		}
		if scale.Spec.Replicas != tc.replicas {
			t.Errorf("%s: the scale subresource reads %d replicas, want %d", tc.name, scale.Spec.Replicas, tc.replicas)
		}
	}
}

// A v1alpha1 request is defaulted too: the API server converts it to v1beta1 for the webhook
// and stores the result.
func TestAV1alpha1RequestIsDefaulted(t *testing.T) {
	c, ns, _ := admin(t)
	ctx := context.Background()
	old := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: ns}, Spec: v1alpha1.ValkeyClusterSpec{
		Topology: v1alpha1.TopologyCluster, Profile: v1alpha1.ProfileCache,
	}}
	if err := c.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	var got v1beta1.ValkeyCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), &got); err != nil {
		t.Fatal(err)
	}
	// (v1alpha1's CRD defaults its own replicas, a count of pods, so they arrive set.)
	if got.Spec.Shards != 3 {
		t.Errorf("a v1alpha1 Cluster without shards is stored with shards %d, want 3", got.Spec.Shards)
	}
	if s := got.Spec.Storage.Size; s == nil || s.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("a v1alpha1 Cache cluster is stored with storage.size %v, want 1Gi", s)
	}
	// An update that removes replicas gets its default back, and one that sets it keeps it.
	got.Spec.Replicas = nil
	if err := c.Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if r := got.Spec.Replicas; r == nil || *r != 1 {
		t.Errorf("an update without replicas stores %v, want the default 1", ptr.Deref(r, -1))
	}
}
