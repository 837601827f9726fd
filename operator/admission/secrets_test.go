package admission_test

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// A Secret the spec names must exist and hold the keys the operator reads; the refusal
// names the Secret, the field and the key.
func TestSecretsTheSpecNamesMustExistWithTheirKeys(t *testing.T) {
	c, ns, _ := admin(t)
	ctx := context.Background()
	secret(t, c, ns, "pw-other-key", "other")
	secret(t, c, ns, "tls-no-ca", "tls.crt", "tls.key")
	secret(t, c, ns, "s3-half", "AWS_ACCESS_KEY_ID")
	cluster := func(name string, spec v1beta1.ValkeyClusterSpec) *v1beta1.ValkeyCluster {
		return &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
	}
	store := func(secret string) v1beta1.BackupStore {
		return v1beta1.BackupStore{Bucket: "backups", CredentialsSecretRef: &v1beta1.SecretRef{Name: secret}}
	}
	refused(t, "a password Secret that does not exist",
		c.Create(ctx, cluster("a", v1beta1.ValkeyClusterSpec{Auth: v1beta1.AuthSpec{PasswordSecretRef: &v1beta1.SecretKeyRef{Name: "nope"}}})),
		"spec.auth.passwordSecretRef", "Secret "+ns+"/nope", "does not exist")
	refused(t, "a password Secret without the key",
		c.Create(ctx, cluster("b", v1beta1.ValkeyClusterSpec{Auth: v1beta1.AuthSpec{PasswordSecretRef: &v1beta1.SecretKeyRef{Name: "pw-other-key"}}})),
		"Secret "+ns+"/pw-other-key", "has no key password")
	refused(t, "a TLS Secret without ca.crt",
		c.Create(ctx, cluster("c", v1beta1.ValkeyClusterSpec{TLS: v1beta1.TLSSpec{Mode: v1beta1.TLSPlainAndTLS, SecretRef: &v1beta1.SecretRef{Name: "tls-no-ca"}}})),
		"spec.tls.secretRef", "has no key ca.crt")
	refused(t, "store credentials without the secret key",
		c.Create(ctx, cluster("d", v1beta1.ValkeyClusterSpec{Backup: &v1beta1.BackupSpec{Store: store("s3-half")}})),
		"spec.backup.store.credentialsSecretRef", "Secret "+ns+"/s3-half", "has no key AWS_SECRET_ACCESS_KEY")
	refused(t, "a restore store's missing credentials",
		c.Create(ctx, cluster("e", v1beta1.ValkeyClusterSpec{RestoreFrom: &v1beta1.RestoreSource{Store: ptr.To(store("s3-none")), Path: "ns/c/b"}})),
		"spec.restoreFrom.store.credentialsSecretRef", "Secret "+ns+"/s3-none", "does not exist")
	acl := &v1beta1.ValkeyACL{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: v1beta1.ValkeyACLSpec{
		Cluster: "f", User: "app", Rules: []v1beta1.ACLRule{"+get"},
		PasswordSecretRefs: []v1beta1.SecretKeyRef{{Name: "pw-other-key", Key: "other"}, {Name: "app-pw"}},
	}}
	if err := c.Create(ctx, cluster("f", v1beta1.ValkeyClusterSpec{})); err != nil {
		t.Fatal(err)
	}
	refused(t, "an ACL's second password Secret that does not exist", c.Create(ctx, acl), "spec.passwordSecretRefs[1]", "Secret "+ns+"/app-pw", "does not exist")

	// With the keys in place, the same specs are admitted.
	secret(t, c, ns, "pw", "password")
	secret(t, c, ns, "tls", "tls.crt", "tls.key", "ca.crt")
	secret(t, c, ns, "s3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	secret(t, c, ns, "app-pw", "password")
	for _, vc := range []*v1beta1.ValkeyCluster{
		cluster("a", v1beta1.ValkeyClusterSpec{Auth: v1beta1.AuthSpec{PasswordSecretRef: &v1beta1.SecretKeyRef{Name: "pw"}}}),
		cluster("c", v1beta1.ValkeyClusterSpec{TLS: v1beta1.TLSSpec{Mode: v1beta1.TLSPlainAndTLS, SecretRef: &v1beta1.SecretRef{Name: "tls"}}}),
		cluster("d", v1beta1.ValkeyClusterSpec{Backup: &v1beta1.BackupSpec{Store: store("s3")}}),
	} {
		if err := c.Create(ctx, vc); err != nil {
			t.Errorf("%s: %v", vc.Name, err)
		}
	}
	if err := c.Create(ctx, acl); err != nil {
		t.Error(err)
	}
}

// A user may name only Secrets they may get: the operator would read any other for them.
// The refusal tells nothing about the Secret (not whether it has the key), and an update by
// that user that leaves someone else's reference alone is admitted.
func TestAUserMayNameOnlySecretsTheyMayGet(t *testing.T) {
	c, ns, _ := admin(t)
	ctx := context.Background()
	secret(t, c, ns, "pw", "password")
	secret(t, c, ns, "wrong-key", "other")
	const user = "alice"
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "valkey-editor", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{v1beta1.GroupName}, Resources: []string{"valkeyclusters"}, Verbs: []string{"get", "create", "update"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-edits", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	alice := userClient(t, user)
	named := func(name, secret string) *v1beta1.ValkeyCluster {
		return &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1beta1.ValkeyClusterSpec{
			Auth: v1beta1.AuthSpec{PasswordSecretRef: &v1beta1.SecretKeyRef{Name: secret}},
		}}
	}
	refused(t, "alice naming a Secret she may not get", alice.Create(ctx, named("a", "pw")), "Secret "+ns+"/pw", "you ("+user+") may not get")
	err := alice.Create(ctx, named("b", "wrong-key"))
	refused(t, "alice naming a Secret she may not get, without its key", err, "Secret "+ns+"/wrong-key", "may not get")
	if err != nil && strings.Contains(err.Error(), "has no key") {
		t.Errorf("the refusal of a Secret alice may not read tells what it holds: %v", err)
	}

	// Someone who may read it names it; alice scales that cluster without touching it.
	if err := c.Create(ctx, named("c", "pw")); err != nil {
		t.Fatal(err)
	}
	var vc v1beta1.ValkeyCluster
	if err := alice.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, &vc); err != nil {
		t.Fatal(err)
	}
	vc.Spec.Replicas = ptr.To[int32](2)
	if err := alice.Update(ctx, &vc); err != nil {
		t.Errorf("alice scaling a cluster whose Secret she did not name: %v", err)
	}

	// With get on that one Secret, she may name it.
	reader := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pw-reader", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"pw"}, Verbs: []string{"get"}},
	}}
	readerBinding := binding.DeepCopy()
	readerBinding.ObjectMeta = metav1.ObjectMeta{Name: "alice-reads-pw", Namespace: ns}
	readerBinding.RoleRef.Name = reader.Name
	for _, o := range []client.Object{reader, readerBinding} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := alice.Create(ctx, named("a", "pw")); err != nil {
		t.Errorf("alice naming a Secret she may get: %v", err)
	}
}
