package operatorsuite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// operatorIdentity gives the operator (it runs in the test's process) an environment whose
// only credentials are the keys given, as an administrator's env or envFrom would: every other
// source of the AWS SDK's default chain empty, the instance metadata service off (no test
// dials 169.254.169.254). Restored after the test.
func operatorIdentity(t *testing.T, accessKey, secretKey string) {
	t.Helper()
	for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"} {
		t.Setenv(k, "")
		_ = os.Unsetenv(k)
	}
	dir := t.TempDir()
	for k, name := range map[string]string{"AWS_CONFIG_FILE": "config", "AWS_SHARED_CREDENTIALS_FILE": "credentials"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv(k, path)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", accessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey)
}

// TestABackupWithoutASecretUsesTheOperatorsIdentityOnlyWhenAllowed: a cluster whose store
// names no credentials Secret. An operator not allowed to lend its identity fails the backup
// with a reason naming both ways out, although its environment holds working keys. Allowed
// (--backup-ambient-credentials), with the store's keys in its environment only, the next
// backup completes, its Event says whose credentials it used, and a restore from it brings the
// cluster back to the data at the snapshot.
func TestABackupWithoutASecretUsesTheOperatorsIdentityOnlyWhenAllowed(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 6*time.Minute)
	spec, keyed := s3Store(t, ctx, ns)
	operatorIdentity(t, keyed.AccessKey, keyed.SecretKey)
	spec.CredentialsSecret = ""

	op := startOperator(t, "")
	vc := backedUpCluster(t, ctx, ns, "solo", 1, spec, nil)
	c := writable(t, vc)
	if err := k.Create(ctx, newBackup(ns, "refused", "solo")); err != nil {
		t.Fatal(err)
	}
	vb := waitBackup(t, ns, "refused", time.Minute, "Failed", phase(v1alpha1.BackupFailed))
	for _, way := range []string{"name a Secret", "--backup-ambient-credentials", "backup.ambientCredentials"} {
		if !strings.Contains(vb.Status.Reason, way) {
			t.Errorf("the refusal does not say %q: %s", way, vb.Status.Reason)
		}
	}
	if keys := objectsUnder(t, ctx, keyed, ns+"/"); len(keys) != 0 {
		t.Fatalf("a refused backup wrote %v", keys)
	}
	op.stop(t)
	// Out of the way: allowed now, its next attempt would complete and delay the one below.
	if err := k.Delete(ctx, vb); err != nil {
		t.Fatal(err)
	}

	startOperator(t, "", func(c *manager.Config) { c.BackupAmbientCredentials = true })
	atSnapshot, _ := backedUpThenChanged(t, ctx, ns, "solo", c, 500, 100, 100)
	if note := eventNote(t, ctx, ns, "snap", "BackupStarted"); !strings.Contains(note, "(credentials: the operator's default chain)") {
		t.Errorf("the BackupStarted Event does not say whose credentials: %q", note)
	}
	if keys := objectsUnder(t, ctx, keyed, ns+"/solo/snap/"); len(keys) != 2 {
		t.Errorf("the backup's directory holds %v", keys)
	}

	restoreInPlace(t, ctx, ns, "solo", v1beta1.RestoreSource{Backup: "snap"})
	waitFor(t, ns, "solo", 3*time.Minute, "restored", restorePhase("Completed"))
	vc = waitFor(t, ns, "solo", time.Minute, "Steady with 1 ready", steadyWith(1))
	if d := nodeDigests(t, ctx, vc); len(d) != 1 || d[0] != atSnapshot {
		t.Fatal("the pod holds other data than at the snapshot")
	}
	if note := eventNote(t, ctx, ns, "solo", "RestoreVerified"); !strings.Contains(note, "(credentials: the operator's default chain)") {
		t.Errorf("the RestoreVerified Event does not say whose credentials: %q", note)
	}
}
