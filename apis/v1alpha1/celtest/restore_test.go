package celtest

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestV1alpha1RefusesARestoreIntoARunningCluster: a restore into a running cluster discards
// every write acknowledged since the backup, and v1alpha1 has no discardCurrentData to say that
// is meant, so restoreFrom set or changed on an existing cluster is refused and the message
// points to v1beta1 or a new cluster. A cluster created with restoreFrom keeps it through other
// changes, and may drop it.
func TestV1alpha1RefusesARestoreIntoARunningCluster(t *testing.T) {
	const refused = "restoring into a running cluster replaces all of its data with the backup's and discards every write acknowledged since the backup was taken, and v1alpha1 has no field to say that is meant: write the change as valkey.fsm.dev/v1beta1 with spec.restoreFrom.discardCurrentData: true, or restore into a new ValkeyCluster"
	const source = "{path: ns/c/nightly, store: {bucket: backups, prefix: old/, endpoint: 'https://s3.example.com', credentialsSecret: s3}}"
	vkc := clusters(t)
	ctx := context.Background()
	// update edits the cluster as it is now, so that a change let through before does not
	// turn the next one into a conflict.
	update := func(t *testing.T, name, restoreFrom string) (*unstructured.Unstructured, error) {
		t.Helper()
		edited, err := vkc.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if restoreFrom == "" {
			unstructured.RemoveNestedField(edited.Object, "spec", "restoreFrom")
		} else if err := unstructured.SetNestedField(edited.Object, parseYAML(t, restoreFrom), "spec", "restoreFrom"); err != nil {
			t.Fatal(err)
		}
		return vkc.Update(ctx, edited, metav1.UpdateOptions{})
	}

	if _, err := vkc.Create(ctx, object(t, "running", "{}"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, source := range map[string]string{
		"a ValkeyBackup":   "{backup: nightly}",
		"a store's backup": "{path: ns/c/nightly, store: {bucket: backups}}",
	} {
		t.Run("set on a running cluster from "+name, func(t *testing.T) {
			_, err := update(t, "running", source)
			check(t, err, refused)
		})
	}

	created, err := vkc.Create(ctx, object(t, "restored", "restoreFrom: "+source), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a cluster with restoreFrom: %v", err)
	}
	if err := unstructured.SetNestedField(created.Object, int64(5), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := vkc.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scaling a cluster created with restoreFrom, restoreFrom unchanged: %v", err)
	}
	for _, c := range []struct{ name, source, want string }{
		{"another backup", "{backup: nightly}", refused},
		{"another path", "{path: ns/c/weekly, store: {bucket: backups, prefix: old/, endpoint: 'https://s3.example.com', credentialsSecret: s3}}", refused},
		{"another bucket", "{path: ns/c/nightly, store: {bucket: archive, prefix: old/, endpoint: 'https://s3.example.com', credentialsSecret: s3}}", refused},
		{"another prefix", "{path: ns/c/nightly, store: {bucket: backups, endpoint: 'https://s3.example.com', credentialsSecret: s3}}", refused},
		{"another endpoint", "{path: ns/c/nightly, store: {bucket: backups, prefix: old/, credentialsSecret: s3}}", refused},
		{"the same backup with other credentials", "{path: ns/c/nightly, store: {bucket: backups, prefix: old/, endpoint: 'https://s3.example.com', credentialsSecret: s3-rotated}}", ""},
		{"restoreFrom removed", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := update(t, "restored", c.source)
			check(t, err, c.want)
		})
	}
}
