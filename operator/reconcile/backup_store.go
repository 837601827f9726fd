package reconcile

import (
	"context"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// The keys of a backup store's credentials Secret: the names the AWS tools use.
const (
	SecretAccessKeyID     = "AWS_ACCESS_KEY_ID"
	SecretSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
)

// backupPath is a backup's directory below its store's prefix: namespace/cluster/backup, so
// that clusters sharing a bucket and prefix never write into each other's backups.
func backupPath(namespace, cluster, name string) string {
	return path.Join(namespace, cluster, name)
}

// errNoCredentialsSecret refuses a store without a credentials Secret (v1beta1 allows one, for
// the AWS SDK's default credential chain, which the backup package does not use yet): better
// refused with a reason than sent to S3 unsigned.
var errNoCredentialsSecret = fmt.Errorf("the store names no credentials Secret: the AWS SDK's default credential chain (IRSA, Pod Identity, instance roles) is not supported yet; name a Secret with the keys %s and %s (spec.backup.store.credentialsSecretRef)", SecretAccessKeyID, SecretSecretAccessKey)

// storeOf turns a store's spec into the store the backup package writes to, reading its
// credentials from the Secret in namespace. The Secret is the user's, not the operator's, so it
// is read from the API server (the cache holds only what the operator made).
func storeOf(ctx context.Context, reader client.Reader, namespace string, spec v1beta1.BackupStore) (backup.Store, error) {
	v1beta1.SetStoreDefaults(&spec)
	if spec.CredentialsSecretName() == "" {
		return backup.Store{}, errNoCredentialsSecret
	}
	var sec corev1.Secret
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: spec.CredentialsSecretName()}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return backup.Store{}, fmt.Errorf("the store's credentials Secret %s/%s does not exist: create it with the keys %s and %s", namespace, spec.CredentialsSecretName(), SecretAccessKeyID, SecretSecretAccessKey)
		}
		return backup.Store{}, fmt.Errorf("reading the store's credentials Secret %s/%s: %w", namespace, spec.CredentialsSecretName(), err)
	}
	var missing []string
	for _, k := range []string{SecretAccessKeyID, SecretSecretAccessKey} {
		if len(sec.Data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return backup.Store{}, fmt.Errorf("the store's credentials Secret %s/%s has no %s", namespace, spec.CredentialsSecretName(), strings.Join(missing, " and no "))
	}
	prefix := spec.Prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	store := backup.Store{
		Endpoint: spec.Endpoint, AllowPlainHTTP: spec.AllowPlainHTTP, Region: spec.Region, Bucket: spec.Bucket, Prefix: prefix, PathStyle: spec.ForcePathStyle,
		AccessKey: string(sec.Data[SecretAccessKeyID]), SecretKey: string(sec.Data[SecretSecretAccessKey]),
		Encryption: spec.Encryption, KMSKeyID: spec.KMSKeyID, ChecksumWhenRequired: spec.Checksums == "WhenRequired",
	}
	// The API refuses a plain-HTTP endpoint without allowPlainHTTP; one stored before that
	// rule (or recorded in a backup's status) is refused here, before any request.
	if err := store.CheckEndpoint(); err != nil {
		return backup.Store{}, err
	}
	return store, nil
}
