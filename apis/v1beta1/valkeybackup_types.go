package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupPhase is where a backup is.
// +kubebuilder:validation:Enum=Pending;Running;Completed;Failed
type BackupPhase string

const (
	// BackupPending: not started (the cluster is not Steady, or another backup of it runs).
	BackupPending BackupPhase = "Pending"
	// BackupRunning: snapshots are streaming into the store.
	BackupRunning BackupPhase = "Running"
	// BackupCompleted: every shard's snapshot and the manifest are stored and verified.
	BackupCompleted BackupPhase = "Completed"
	// BackupFailed: the last attempt failed (reason says why); nextAttemptAt says when the
	// next one runs, and none does once the attempts are used up.
	BackupFailed BackupPhase = "Failed"
)

// ValkeyBackupSpec says which cluster to back up.
type ValkeyBackupSpec struct {
	// Cluster is the ValkeyCluster in this namespace to back up; its spec.backup.store says
	// where the backup goes.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cluster is immutable: create another ValkeyBackup"
	Cluster string `json:"cluster"`
}

// ValkeyBackupStatus is what became of a backup; written by the operator only.
type ValkeyBackupStatus struct {
	// Phase is Pending, Running, Completed or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`

	// Reason says why the backup waits or failed.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Attempts is how many attempts started.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// NextAttemptAt is when a failed backup is tried again (none once its attempts are used
	// up).
	// +optional
	NextAttemptAt *metav1.Time `json:"nextAttemptAt,omitempty"`

	// StartedAt is when the last attempt started, CompletedAt when the backup completed.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// Location is the backup's directory in the store (s3://bucket/prefix/namespace/cluster/name/).
	// +optional
	Location string `json:"location,omitempty"`

	// Store is the store the backup was written to (the cluster's spec.backup.store when it
	// started), so that it can be restored after the cluster is gone.
	// +optional
	Store *BackupStore `json:"store,omitempty"`

	// Path is the backup's directory below the store's prefix.
	// +optional
	Path string `json:"path,omitempty"`

	// Mode is how the data was laid out: Replication (one snapshot; Standalone and
	// Replication topologies) or Cluster (one snapshot per shard, with its slots).
	// ValkeyVersion is what the source nodes ran.
	// +optional
	Mode BackupMode `json:"mode,omitempty"`
	// +optional
	ValkeyVersion string `json:"valkeyVersion,omitempty"`

	// Size is the bytes of every shard's snapshot together.
	// +optional
	Size int64 `json:"size,omitempty"`

	// SizeHuman is size for people, in binary units ("1.5 GiB"): the Size column of kubectl
	// get, since a printer column cannot format a number. Scripts read size.
	// +optional
	SizeHuman string `json:"sizeHuman,omitempty"`

	// Shards are the shards' snapshots, one each.
	// +optional
	Shards []BackupShard `json:"shards,omitempty"`

	// Runner identifies the operator process running the attempt: a Running backup whose
	// runner is another process was interrupted by an operator restart.
	// +optional
	Runner string `json:"runner,omitempty"`

	// Conditions are Ready (True once the backup Completed; False with the phase as its
	// reason otherwise), for kubectl wait --for=condition=Ready and tools that read
	// conditions. The phase stays, for people.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// ConditionBackupReady is a ValkeyBackup's Ready condition type.
const ConditionBackupReady = "Ready"

// BackupMode is how a backup's data was laid out.
// +kubebuilder:validation:Enum=Replication;Cluster
type BackupMode string

const (
	// BackupModeReplication: one snapshot of a Standalone or Replication topology.
	BackupModeReplication BackupMode = "Replication"
	// BackupModeCluster: one snapshot per shard of a Cluster topology.
	BackupModeCluster BackupMode = "Cluster"
)

// BackupShard is one shard's snapshot.
type BackupShard struct {
	Index int32 `json:"index"`
	// Node is the pod the snapshot was read from.
	Node string `json:"node"`
	// Slots are the hash slots the shard served (topology Cluster), such as 0-5460.
	// +optional
	Slots string `json:"slots,omitempty"`
	// File is the object's name in the backup's directory.
	File string `json:"file"`
	Size int64  `json:"size"`
	// SHA256 is the hex sha256 of the object.
	SHA256 string `json:"sha256"`
	// RDBVersion is the RDB format version of the snapshot.
	// +optional
	RDBVersion string `json:"rdbVersion,omitempty"`
}

// ValkeyBackup is one backup of a ValkeyCluster to S3: one RDB snapshot per shard and a
// manifest. Create one to take a backup now (kubectl valkey backup NAME does); spec.backup's
// schedule creates them too. Deleting a ValkeyBackup leaves its objects in the store;
// retention deletes both.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vkb,categories=valkey,scope=Namespaced
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.sizeHuman`,description="Size of every shard's snapshot together"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.valkeyVersion`,priority=1,description="Valkey version of the source nodes"
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completedAt`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Location",type=string,JSONPath=`.status.location`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ValkeyBackupSpec `json:"spec"`

	// +optional
	Status ValkeyBackupStatus `json:"status,omitempty"`
}

// ValkeyBackupList is a list of ValkeyBackups.
//
// +kubebuilder:object:root=true
type ValkeyBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ValkeyBackup `json:"items"`
}
