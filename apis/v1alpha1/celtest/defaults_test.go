package celtest

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestAPIServerDefaults checks that the API server fills in exactly the defaults that
// v1alpha1.SetDefaults does, whatever the user left out.
func TestAPIServerDefaults(t *testing.T) {
	cases := []struct {
		name, spec string
		// given is the spec as sent, in Go; its unset fields get the Go defaults.
		given v1alpha1.ValkeyClusterSpec
	}{
		{name: "no spec at all"},
		{name: "empty spec", spec: "{}"},
		{name: "empty nested objects", spec: "{storage: {}, auth: {}, podDisruptionBudget: {}}"},
		{
			name: "storage class only", spec: "storage: {storageClassName: fast}",
			given: v1alpha1.ValkeyClusterSpec{Storage: v1alpha1.StorageSpec{StorageClassName: ptr("fast")}},
		},
		{
			name: "existing secret without key", spec: "auth: {existingSecret: {name: pw}}",
			given: v1alpha1.ValkeyClusterSpec{Auth: v1alpha1.AuthSpec{ExistingSecret: &v1alpha1.SecretKeyReference{Name: "pw"}}},
		},
		{
			name: "auth and pdb off", spec: "auth: {enabled: false}\npodDisruptionBudget: {enabled: false}",
			given: v1alpha1.ValkeyClusterSpec{
				Auth:                v1alpha1.AuthSpec{Enabled: ptr(false)},
				PodDisruptionBudget: v1alpha1.PodDisruptionBudgetSpec{Enabled: ptr(false)},
			},
		},
	}
	vkc := clusters(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			created, err := vkc.Create(context.Background(), object(t, "vk", c.spec), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			defer func() { _ = vkc.Delete(context.Background(), "vk", metav1.DeleteOptions{}) }()
			got := typed(t, created).Spec
			want := *c.given.DeepCopy()
			v1alpha1.SetDefaults(&want)
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("API server defaulted the spec to\n%+v\nv1alpha1.SetDefaults gives\n%+v", got, want)
			}
		})
	}
}

// TestAPIServerDefaultValues pins the documented defaults themselves, so that a changed
// marker and a changed constant together cannot slip through TestAPIServerDefaults.
func TestAPIServerDefaultValues(t *testing.T) {
	vkc := clusters(t)
	created, err := vkc.Create(context.Background(), object(t, "vk", "{}"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := typed(t, created).Spec
	if s.Topology != "Replication" || s.Profile != "Durable" || s.Image != "valkey/valkey:8.0" || s.Replicas != 3 {
		t.Errorf("topology %q, profile %q, image %q, replicas %d; want Replication, Durable, valkey/valkey:8.0, 3",
			s.Topology, s.Profile, s.Image, s.Replicas)
	}
	if s.Storage.Size == nil || s.Storage.Size.String() != "1Gi" || s.Storage.StorageClassName != nil {
		t.Errorf("storage = %+v; want size 1Gi and the default class", s.Storage)
	}
	if s.Auth.Enabled == nil || !*s.Auth.Enabled || s.Auth.ExistingSecret != nil {
		t.Errorf("auth = %+v; want enabled with a generated password", s.Auth)
	}
	if s.PodDisruptionBudget.Enabled == nil || !*s.PodDisruptionBudget.Enabled {
		t.Errorf("podDisruptionBudget = %+v; want enabled", s.PodDisruptionBudget)
	}
}

// TestGoZeroValuesGetDefaults sends a spec built in Go with nothing set, as a Go client
// would: every field must be left to the API server's defaults. In particular auth must
// come back enabled, not turned off by Go's false.
func TestGoZeroValuesGetDefaults(t *testing.T) {
	vkc := clusters(t)
	c := &v1alpha1.ValkeyCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "ValkeyCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: "vk"},
	}
	created, err := vkc.Create(context.Background(), unstructuredOf(t, c), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := typed(t, created).Spec
	var want v1alpha1.ValkeyClusterSpec
	v1alpha1.SetDefaults(&want)
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("zero Go spec came back as\n%+v\nwant\n%+v", got, want)
	}
}

func ptr[T any](v T) *T { return &v }
