package admission_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// A ValkeyACL or ValkeyBackup of a cluster that does not exist is refused; a backup of a
// cluster without spec.backup is admitted with a warning.
func TestACLsAndBackupsNeedTheirCluster(t *testing.T) {
	c, ns, w := admin(t)
	ctx := context.Background()
	secret(t, c, ns, "pw", "password")
	acl := &v1beta1.ValkeyACL{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: v1beta1.ValkeyACLSpec{
		Cluster: "cache", User: "app", Rules: []v1beta1.ACLRule{"+get"}, PasswordSecretRefs: []v1beta1.SecretKeyRef{{Name: "pw"}},
	}}
	backup := &v1beta1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: ns}, Spec: v1beta1.ValkeyBackupSpec{Cluster: "cache"}}
	refused(t, "an ACL of a missing cluster", c.Create(ctx, acl.DeepCopy()), "ValkeyCluster "+ns+"/cache", "does not exist")
	refused(t, "a backup of a missing cluster", c.Create(ctx, backup.DeepCopy()), "ValkeyCluster "+ns+"/cache", "does not exist")

	if err := c.Create(ctx, &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, acl); err != nil {
		t.Errorf("an ACL of an existing cluster: %v", err)
	}
	if err := c.Create(ctx, backup); err != nil {
		t.Errorf("a backup of an existing cluster: %v", err)
	}
	if !strings.Contains(w.all(), "has no spec.backup") {
		t.Errorf("a backup of a cluster without spec.backup got the warnings %q, want one about spec.backup", w.all())
	}
}

// A restore must name a backup that exists and is Completed.
func TestARestoreNeedsACompletedBackup(t *testing.T) {
	c, ns, _ := admin(t)
	ctx := context.Background()
	restore := func(name string) *v1beta1.ValkeyCluster {
		return &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1beta1.ValkeyClusterSpec{
			RestoreFrom: &v1beta1.RestoreSource{Backup: "nightly"},
		}}
	}
	refused(t, "a restore from a missing backup", c.Create(ctx, restore("a")), "ValkeyBackup "+ns+"/nightly", "does not exist")
	source := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "source", Namespace: ns}, Spec: v1beta1.ValkeyClusterSpec{
		Backup: &v1beta1.BackupSpec{Store: v1beta1.BackupStore{Bucket: "backups"}},
	}}
	if err := c.Create(ctx, source); err != nil {
		t.Fatal(err)
	}
	b := &v1beta1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns}, Spec: v1beta1.ValkeyBackupSpec{Cluster: "source"}}
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	refused(t, "a restore from a backup not started", c.Create(ctx, restore("a")), "ValkeyBackup "+ns+"/nightly", "not started, not Completed")
	b.Status.Phase = v1beta1.BackupRunning
	if err := c.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	refused(t, "a restore from a Running backup", c.Create(ctx, restore("a")), "ValkeyBackup "+ns+"/nightly", "Running, not Completed")
	b.Status.Phase, b.Status.CompletedAt = v1beta1.BackupCompleted, &metav1.Time{Time: time.Now()}
	b.Status.Store = &v1beta1.BackupStore{Bucket: "backups", CredentialsSecretRef: &v1beta1.SecretRef{Name: "s3"}}
	if err := c.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	// The restore reads the backup's store with the credentials it was written with.
	refused(t, "a restore from a backup whose store credentials are gone", c.Create(ctx, restore("a")), "Secret "+ns+"/s3", "does not exist")
	secret(t, c, ns, "s3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	if err := c.Create(ctx, restore("a")); err != nil {
		t.Errorf("a restore from a Completed backup: %v", err)
	}
}
