package cluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestARotationSecretFeedsPasswordsOnlyWhenTheClusterOwnsAndFilledIt: the rotation Secret
// of a completed rotation is emptied (the operator may not delete Secrets), and an empty one
// is no rotation; nor is a Secret of that name the cluster does not own (someone else's, or
// an earlier cluster's of the same name): its "passwords" must never reach a node. A new
// rotation reuses the emptied Secret. Against a real API server.
func TestARotationSecretFeedsPasswordsOnlyWhenTheClusterOwnsAndFilledIt(t *testing.T) {
	c := apiClient(t)
	ctx := context.Background()
	ns := newNamespace(t, c, "rotation-secret-")
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c"}}
	if err := c.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	name := types.NamespacedName{Namespace: ns.Name, Name: kube.RotationSecretName(vc)}
	filled := map[string][]byte{"id": []byte("r1"), "users": []byte("operator"),
		"next-" + kube.KeyOperatorPassword: []byte("new"), "previous-" + kube.KeyOperatorPassword: []byte("old")}
	write := func(owners []metav1.OwnerReference, data map[string][]byte) {
		t.Helper()
		var s corev1.Secret
		if err := c.Get(ctx, name, &s); err != nil {
			s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name}}
		}
		s.OwnerReferences, s.Data = owners, data
		var err error
		if s.ResourceVersion == "" {
			err = c.Create(ctx, &s)
		} else {
			err = c.Update(ctx, &s)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	load := func(what string) *valkey.RotationPasswords {
		t.Helper()
		r, err := kube.LoadRotation(ctx, c, vc)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return r
	}
	ours := metav1.OwnerReference{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ValkeyCluster", Name: vc.Name, UID: vc.UID}
	other := ours
	other.UID = "an-earlier-cluster-of-the-same-name"

	write(nil, filled)
	if r := load("someone else's Secret"); r != nil {
		t.Errorf("a Secret the cluster does not own is read as rotation %q: its passwords would reach the nodes", r.ID)
	}
	write([]metav1.OwnerReference{other}, filled)
	if r := load("an earlier cluster's Secret"); r != nil {
		t.Errorf("a Secret owned by another cluster of that name is read as rotation %q", r.ID)
	}
	write([]metav1.OwnerReference{ours}, filled)
	if r := load("the cluster's Secret"); r == nil || r.ID != "r1" || valkey.Of(r.Next, valkey.UserOperator) != "new" {
		t.Fatalf("the cluster's own rotation Secret read as %+v, want rotation r1", r)
	}
	write([]metav1.OwnerReference{ours}, nil)
	if r := load("an emptied Secret"); r != nil {
		t.Errorf("an emptied rotation Secret is read as rotation %q, want no rotation", r.ID)
	}

	// The completed rotation's passwords go, the Secret stays (the owner reference takes it
	// with the cluster), and the next rotation is prepared in it.
	write([]metav1.OwnerReference{ours}, filled)
	if err := kube.EmptyRotation(ctx, c, vc); err != nil {
		t.Fatal(err)
	}
	var s corev1.Secret
	if err := c.Get(ctx, name, &s); err != nil || len(s.Data) != 0 {
		t.Errorf("after EmptyRotation: %v, %d keys left; want the Secret there without passwords", err, len(s.Data))
	}
	if r, err := kube.PrepareRotation(ctx, c, c, vc, ours, "r2", []string{valkey.UserOperator}, valkey.Passwords{Operator: "new"}, ""); err != nil || r == nil || r.ID != "r2" {
		t.Errorf("a rotation prepared in the emptied Secret: %+v, %v; want rotation r2", r, err)
	}
	// Someone else's Secret of that name is not the operator's to empty.
	write(nil, filled)
	if err := kube.EmptyRotation(ctx, c, vc); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, name, &s); err != nil || string(s.Data["id"]) != "r1" {
		t.Errorf("EmptyRotation changed a Secret the cluster does not own: %v, %v", err, s.Data)
	}
}
