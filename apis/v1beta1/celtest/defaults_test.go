package celtest

import (
	"context"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestAPIServerDefaultsAgreeWithSetDefaults checks that every default the API server applies
// is the one v1beta1.SetDefaults applies: SetDefaults over what the API server stored gives
// what SetDefaults gives over the spec as sent. The defaults that depend on another field
// (replicas by topology, shards, the volume's size by profile) are not the API server's; the
// operator and the mutating webhook apply them with SetDefaults.
func TestAPIServerDefaultsAgreeWithSetDefaults(t *testing.T) {
	cases := []struct{ name, spec string }{
		{name: "no spec at all"},
		{name: "empty nested objects", spec: "{storage: {}, auth: {}, podDisruptionBudget: {}, tls: {}}"},
		{name: "standalone cache", spec: "{topology: Standalone, profile: Cache}"},
		{name: "cluster", spec: "{topology: Cluster}"},
		{name: "sentinel", spec: "{topology: Sentinel}"},
		{name: "sentinel with empty settings", spec: "{topology: Sentinel, sentinel: {}}"},
		{name: "secret without key", spec: "auth: {passwordSecretRef: {name: pw}}"},
		{name: "service without type", spec: "service: {annotations: {a: b}}"},
		{name: "issuer without kind", spec: "tls: {mode: PlainAndTLS, issuerRef: {name: ca}}"},
		{name: "backup store", spec: "backup: {store: {bucket: bkp, endpoint: 'https://127.0.0.1:1'}}"},
	}
	vkc := clusters(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sent := object(t, "vk", c.spec)
			var given v1beta1.ValkeyCluster
			fromUnstructured(t, sent.Object, &given)
			created, err := vkc.Create(context.Background(), sent, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			defer func() { _ = vkc.Delete(context.Background(), "vk", metav1.DeleteOptions{}) }()
			var stored v1beta1.ValkeyCluster
			fromUnstructured(t, created.Object, &stored)
			got, want := stored.Spec.DeepCopy(), given.Spec.DeepCopy()
			v1beta1.SetDefaults(got)
			v1beta1.SetDefaults(want)
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("SetDefaults over the stored spec gives\n%+v\nover the spec as sent\n%+v", got, want)
			}
			again := got.DeepCopy()
			v1beta1.SetDefaults(again)
			if !equality.Semantic.DeepEqual(again, got) {
				t.Errorf("SetDefaults applied twice changed the spec:\n%+v\n%+v", got, again)
			}
		})
	}
}

func fromUnstructured(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
}
