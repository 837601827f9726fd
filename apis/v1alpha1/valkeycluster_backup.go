package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupSpec is where a cluster's backups go, when they are taken and how many are kept. A
// backup is one RDB snapshot per shard streamed from a replica into the store (no copy on any
// disk) and a manifest written last; see docs/backup.md.
type BackupSpec struct {
	// Store is the S3 bucket (AWS or any S3-compatible store) the backups are written to.
	Store BackupStore `json:"store"`

	// Schedule takes a backup on a cron schedule, in UTC: five fields (minute hour
	// day-of-month month day-of-week, "0 3 * * *" is every day at 03:00) or a shorthand
	// (@hourly, @daily, @weekly, @monthly, @every 6h). Empty: backups are taken only on demand
	// (kubectl valkey backup NAME, or a ValkeyBackup you create).
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every [0-9]+[smh]([0-9]+[smh])*|[^ ]+( +[^ ]+){4})$')",message="backup.schedule must be five cron fields (minute hour day-of-month month day-of-week, for example '0 3 * * *') or @hourly, @daily, @weekly, @monthly, @yearly or '@every <duration>' such as '@every 6h'"
	// +optional
	Schedule string `json:"schedule,omitempty"`

	// Suspend stops scheduled backups without forgetting the schedule; backups on demand
	// still run.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Retention is how many scheduled backups are kept. Backups taken on demand are kept
	// until you delete them.
	// +kubebuilder:default={}
	// +optional
	Retention BackupRetention `json:"retention,omitempty"`
}

// BackupRetention prunes scheduled backups: those beyond the newest Count completed ones, and
// those older than MaxAge, lose their objects in the store and then their ValkeyBackup. The
// newest completed backup is never pruned, whatever its age.
type BackupRetention struct {
	// Count is how many completed scheduled backups are kept.
	// +kubebuilder:default=7
	// +kubebuilder:validation:Minimum=1
	// +optional
	Count *int32 `json:"count,omitempty"`

	// MaxAge prunes scheduled backups completed longer ago than this (a Go duration such as
	// 168h). Empty: by count only.
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// BackupStore is an S3 bucket and the credentials to write to it.
//
// +kubebuilder:validation:XValidation:rule="!has(self.encryption) || self.encryption != 'aws:kms' || (has(self.kmsKeyID) && size(self.kmsKeyID) > 0)",message="encryption aws:kms needs kmsKeyID: set it to the KMS key's id or ARN, or use encryption AES256"
// +kubebuilder:validation:XValidation:rule="!has(self.kmsKeyID) || (has(self.encryption) && self.encryption == 'aws:kms')",message="kmsKeyID is only used with encryption aws:kms: set encryption to aws:kms, or remove kmsKeyID"
// +kubebuilder:validation:XValidation:rule="!has(self.endpoint) || !self.endpoint.startsWith('http://') || (has(self.allowPlainHTTP) && self.allowPlainHTTP)",message="backup.store.endpoint is plain HTTP, which sends the store's credentials and the backups unencrypted: use an https:// endpoint, or set allowPlainHTTP: true if the network to the store is trusted"
type BackupStore struct {
	// Bucket is the bucket's name; it must exist.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	Bucket string `json:"bucket"`

	// Prefix is prepended to every object's key. The operator adds the namespace and the
	// cluster's name below it: a backup named B of cluster C in namespace N is under
	// <prefix>N/C/B/.
	// +optional
	Prefix string `json:"prefix,omitempty"`

	// Endpoint is the store's URL (https://s3.example.com); empty for AWS S3, which is
	// found from the region.
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^ /]+(/.*)?$')",message="backup.store.endpoint must be a URL such as https://s3.example.com:9000"
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// AllowPlainHTTP lets endpoint be an http:// URL. Without it only https:// is accepted:
	// over plain HTTP the store's credentials sign requests anyone on the way can read, and
	// the backups cross the network unencrypted. Whatever the scheme, the operator follows no
	// redirect and does not connect to link-local or cloud metadata addresses.
	// +optional
	AllowPlainHTTP bool `json:"allowPlainHTTP,omitempty"`

	// Region is the bucket's region.
	// +kubebuilder:default="us-east-1"
	// +optional
	Region string `json:"region,omitempty"`

	// ForcePathStyle addresses the bucket in the URL's path (https://host/bucket/key) rather
	// than its host name; most S3-compatible stores other than AWS need it.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`

	// CredentialsSecret names a Secret in the cluster's namespace with the keys
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. Empty (a store written as v1beta1 without
	// credentialsSecretRef): the operator signs with its own identity, the AWS SDK's default
	// credential chain, where its administrator allows it (--backup-ambient-credentials);
	// otherwise it refuses the store, saying so in the backup's status.
	// +kubebuilder:validation:MinLength=1
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`

	// Encryption asks the store to encrypt the objects: AES256 (keys the store manages) or
	// aws:kms (with kmsKeyID). Empty: the bucket's default.
	// +kubebuilder:validation:Enum=AES256;"aws:kms"
	// +optional
	Encryption string `json:"encryption,omitempty"`

	// KMSKeyID is the KMS key for encryption aws:kms.
	// +optional
	KMSKeyID string `json:"kmsKeyID,omitempty"`

	// Checksums is when request checksums are sent: WhenSupported (the AWS SDK's default, a
	// CRC32 with every upload) or WhenRequired (only where the S3 API requires one), for
	// S3-compatible stores that refuse the SDK's default checksums.
	// +kubebuilder:validation:Enum=WhenSupported;WhenRequired
	// +kubebuilder:default=WhenSupported
	// +optional
	Checksums string `json:"checksums,omitempty"`
}

// RestoreSource names the backup a cluster is restored from: a ValkeyBackup in the cluster's
// namespace, or a backup's directory in a store (a backup of another namespace, or one whose
// ValkeyBackup is gone). On a new cluster the snapshot is loaded while it bootstraps, before
// any client write is accepted. A restore into a running cluster discards every write
// acknowledged after the backup was taken; v1alpha1 refuses it (see restoreFrom), v1beta1
// does it with restoreFrom.discardCurrentData.
//
// +kubebuilder:validation:XValidation:rule="has(self.backup) != (has(self.store) || has(self.path))",message="restoreFrom names either backup (a ValkeyBackup) or store and path (a backup's directory in a store), not both"
// +kubebuilder:validation:XValidation:rule="has(self.store) == has(self.path)",message="restoreFrom.store and restoreFrom.path go together: path is the backup's directory in the store, below its prefix (namespace/cluster/backup)"
type RestoreSource struct {
	// Backup is the name of a completed ValkeyBackup in the cluster's namespace.
	// +optional
	Backup string `json:"backup,omitempty"`

	// Store is the store holding the backup, with credentials in this namespace.
	// +optional
	Store *BackupStore `json:"store,omitempty"`

	// Path is the backup's directory below the store's prefix, such as prod/cache/nightly-1.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Path string `json:"path,omitempty"`
}
