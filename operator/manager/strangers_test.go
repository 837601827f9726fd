package manager

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestTheCacheKeepsOnlyTheMetadataOfAStranger: an object carrying the cluster label that no
// ValkeyCluster owns keeps in the cache its name, identity, owners and the operator's labels,
// and none of its data, annotations or other labels (what its author sizes); one a
// ValkeyCluster owns is kept whole, but for managedFields.
func TestTheCacheKeepsOnlyTheMetadataOfAStranger(t *testing.T) {
	big := strings.Repeat("x", 512<<10)
	stranger := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "flood-1", Namespace: "ns", UID: "u1", ResourceVersion: "7",
			Labels:          map[string]string{"valkey.fsm.dev/cluster": "v", "padding": "p"},
			Annotations:     map[string]string{"a": big},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "o"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Data: map[string]string{"k": big},
	}
	out, err := strangerTransform(stranger)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ConfigMap)
	if got.Name != "flood-1" || got.Namespace != "ns" || got.UID != "u1" || got.ResourceVersion != "7" || len(got.OwnerReferences) != 1 || got.Labels["valkey.fsm.dev/cluster"] != "v" {
		t.Fatalf("what tells the object is in the way was lost: %+v", got.ObjectMeta)
	}
	if got.Data != nil || got.Annotations != nil || got.Labels["padding"] != "" || got.ManagedFields != nil {
		t.Fatalf("a stranger's data kept: %d data keys, %d annotations, labels %v", len(got.Data), len(got.Annotations), got.Labels)
	}

	ours := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "v-auth", Namespace: "ns", Annotations: map[string]string{"a": "b"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ValkeyCluster", Name: "v", UID: "c"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "valkey-operator"}}},
		Data: map[string][]byte{"auth.conf": []byte("user ...")},
	}
	out, err = strangerTransform(ours)
	if err != nil {
		t.Fatal(err)
	}
	if s := out.(*corev1.Secret); len(s.Data["auth.conf"]) == 0 || s.Annotations["a"] != "b" || s.ManagedFields != nil {
		t.Fatalf("an object a ValkeyCluster owns must be kept whole (but managedFields): %+v", s)
	}
}
