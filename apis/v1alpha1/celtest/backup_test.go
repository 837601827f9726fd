package celtest

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestBackupValidation checks spec.backup and spec.restoreFrom: good settings are accepted and
// each mistake is refused with the message that says what to change.
func TestBackupValidation(t *testing.T) {
	const store = "store: {bucket: backups, credentialsSecret: s3}"
	cases := []struct{ name, spec, want string }{
		{"store only", "backup: {" + store + "}", ""},
		{"daily schedule", "backup: {schedule: '0 3 * * *', " + store + "}", ""},
		{"shorthand schedule", "backup: {schedule: '@hourly', " + store + "}", ""},
		{"every schedule", "backup: {schedule: '@every 1h30m', " + store + "}", ""},
		{"four fields", "backup: {schedule: '0 3 * *', " + store + "}", "backup.schedule must be five cron fields"},
		{"unknown shorthand", "backup: {schedule: '@sometimes', " + store + "}", "backup.schedule must be five cron fields"},
		{"retention", "backup: {retention: {count: 3, maxAge: 168h}, " + store + "}", ""},
		{"retention of none", "backup: {retention: {count: 0}, " + store + "}", "should be greater than or equal to 1"},
		{"no bucket", "backup: {store: {credentialsSecret: s3}}", "spec.backup.store.bucket: Required value"},
		{"no credentials (the operator refuses it, v1beta1 can say so)", "backup: {store: {bucket: backups}}", ""},
		{"endpoint", "backup: {store: {bucket: b1b, credentialsSecret: s3, endpoint: 'https://s3.example.com:9000', forcePathStyle: true}}", ""},
		{"plain HTTP endpoint", "backup: {store: {bucket: b1b, credentialsSecret: s3, endpoint: 'http://s3.example.com:7070', forcePathStyle: true}}", "backup.store.endpoint is plain HTTP"},
		{"plain HTTP endpoint allowed", "backup: {store: {bucket: b1b, credentialsSecret: s3, endpoint: 'http://s3.example.com:7070', allowPlainHTTP: true, forcePathStyle: true}}", ""},
		{"plain HTTP restore store", "restoreFrom: {path: ns/c/nightly, store: {bucket: b1b, credentialsSecret: s3, endpoint: 'http://s3.example.com:7070'}}", "backup.store.endpoint is plain HTTP"},
		{"endpoint without a scheme", "backup: {store: {bucket: b1b, credentialsSecret: s3, endpoint: 's3.example.com'}}", "backup.store.endpoint must be a URL"},
		{"kms with a key", "backup: {store: {bucket: b1b, credentialsSecret: s3, encryption: 'aws:kms', kmsKeyID: k1}}", ""},
		{"kms without a key", "backup: {store: {bucket: b1b, credentialsSecret: s3, encryption: 'aws:kms'}}", "encryption aws:kms needs kmsKeyID"},
		{"a key without kms", "backup: {store: {bucket: b1b, credentialsSecret: s3, encryption: AES256, kmsKeyID: k1}}", "kmsKeyID is only used with encryption aws:kms"},
		{"unknown encryption", "backup: {store: {bucket: b1b, credentialsSecret: s3, encryption: rot13}}", `Unsupported value: "rot13"`},
		{"checksums when required", "backup: {store: {bucket: b1b, credentialsSecret: s3, checksums: WhenRequired}}", ""},
		{"restore from a backup", "restoreFrom: {backup: nightly}", ""},
		{"restore from a path", "restoreFrom: {path: ns/c/nightly, " + store + "}", ""},
		{"restore from both", "restoreFrom: {backup: nightly, path: ns/c/nightly, " + store + "}", "restoreFrom names either backup"},
		{"restore from nothing", "restoreFrom: {}", "restoreFrom names either backup"},
		{"restore from a store without a path", "restoreFrom: {" + store + "}", "restoreFrom.store and restoreFrom.path go together"},
	}
	vkc := clusters(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := vkc.Create(context.Background(), object(t, fmt.Sprintf("bk-%d", i), c.spec), metav1.CreateOptions{})
			check(t, err, c.want)
		})
	}
}

// TestBackupStoreDefaults checks that the API server fills in what SetDefaults does.
func TestBackupStoreDefaults(t *testing.T) {
	vkc := clusters(t)
	created, err := vkc.Create(context.Background(), object(t, "bk-defaults", "backup: {store: {bucket: backups, credentialsSecret: s3}}"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := typed(t, created).Spec.Backup
	want := &v1alpha1.ValkeyClusterSpec{Backup: &v1alpha1.BackupSpec{Store: v1alpha1.BackupStore{Bucket: "backups", CredentialsSecret: "s3"}}}
	v1alpha1.SetDefaults(want)
	if got == nil || got.Store != want.Backup.Store || got.Retention.Count == nil || *got.Retention.Count != *want.Backup.Retention.Count {
		t.Fatalf("the API server defaulted backup to %+v, SetDefaults to %+v", got, want.Backup)
	}
}

// TestValkeyBackupValidation checks the ValkeyBackup kind: a cluster is required and cannot be
// changed afterwards.
func TestValkeyBackupValidation(t *testing.T) {
	backups := apiServer(t).Resource(v1alpha1.SchemeGroupVersion.WithResource("valkeybackups")).Namespace(namespace(t))
	obj := func(name, cluster string) *unstructured.Unstructured {
		spec := map[string]any{}
		if cluster != "" {
			spec["cluster"] = cluster
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "ValkeyBackup",
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}
	}
	_, err := backups.Create(context.Background(), obj("no-cluster", ""), metav1.CreateOptions{})
	check(t, err, "spec.cluster: Required value")
	created, err := backups.Create(context.Background(), obj("nightly", "prod"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(created.Object, "other", "spec", "cluster"); err != nil {
		t.Fatal(err)
	}
	_, err = backups.Update(context.Background(), created, metav1.UpdateOptions{})
	check(t, err, "cluster is immutable: create another ValkeyBackup")
}
