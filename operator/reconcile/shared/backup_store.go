package shared

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

// BackupPath is a backup's directory below its store's prefix: namespace/cluster/backup, so
// that clusters sharing a bucket and prefix never write into each other's backups.
func BackupPath(namespace, cluster, name string) string {
	return path.Join(namespace, cluster, name)
}

// errNoCredentialsSecret refuses a store without a credentials Secret when the operator may
// not lend it its own identity (Stores.Ambient): that identity is shared by every
// namespace the operator watches, so only its administrator can allow it.
var errNoCredentialsSecret = fmt.Errorf("the store names no credentials Secret: name a Secret with the keys %s and %s (spec.backup.store.credentialsSecretRef), or ask the operator's administrator to let stores without one use the operator's own cloud identity (IRSA, Pod Identity, instance role: the operator's flag --backup-ambient-credentials, chart value backup.ambientCredentials)", SecretAccessKeyID, SecretSecretAccessKey)

// Stores opens the backup stores the specs name: backups write to them, restores read from
// them.
type Stores struct {
	// Reader reads the user's credentials Secrets from the API server.
	Reader client.Reader
	// Ambient, when set, signs the requests of stores that name no credentials Secret with
	// the operator's own identity (--backup-ambient-credentials); nil: such stores are refused.
	Ambient *backup.AmbientCredentials
}

// Open turns a store's spec into the store the backup package writes to, reading its
// credentials from the Secret in namespace. The Secret is the user's, not the operator's, so it
// is read from the API server (the cache holds only what the operator made). A store naming no
// Secret signs with the operator's default credential chain, where the operator allows it; a
// Secret named but missing or incomplete never falls back to it.
func (st Stores) Open(ctx context.Context, namespace string, spec v1beta1.BackupStore) (backup.Store, error) {
	v1beta1.SetStoreDefaults(&spec)
	if spec.CredentialsSecretName() == "" {
		if st.Ambient == nil {
			return backup.Store{}, errNoCredentialsSecret
		}
		store, err := storeWithoutCredentials(spec)
		if err != nil {
			return backup.Store{}, err
		}
		store.Ambient = st.Ambient
		return store, nil
	}
	reader := st.Reader
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
	store, err := storeWithoutCredentials(spec)
	if err != nil {
		return backup.Store{}, err
	}
	store.AccessKey, store.SecretKey = string(sec.Data[SecretAccessKeyID]), string(sec.Data[SecretSecretAccessKey])
	store.CredentialsSecret = namespace + "/" + spec.CredentialsSecretName()
	return store, nil
}

// storeWithoutCredentials is the store of spec, its endpoint checked, before the caller gives
// it credentials.
func storeWithoutCredentials(spec v1beta1.BackupStore) (backup.Store, error) {
	prefix := spec.Prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	store := backup.Store{
		Endpoint: spec.Endpoint, AllowPlainHTTP: spec.AllowPlainHTTP, Region: spec.Region, Bucket: spec.Bucket, Prefix: prefix, PathStyle: spec.ForcePathStyle,
		Encryption: spec.Encryption, KMSKeyID: spec.KMSKeyID, ChecksumWhenRequired: spec.Checksums == "WhenRequired",
	}
	// The API refuses a plain-HTTP endpoint without allowPlainHTTP; one stored before that
	// rule (or recorded in a backup's status) is refused here, before any request.
	if err := store.CheckEndpoint(); err != nil {
		return backup.Store{}, err
	}
	return store, nil
}
