package v1beta1

// DeletionSpec is what the operator does before a deleted ValkeyCluster's objects go.
type DeletionSpec struct {
	// FinalBackup takes a last backup to spec.backup.store when the ValkeyCluster is
	// deleted, after client writes are closed, and lets the objects (and, with a Delete
	// reclaim policy, the data) go only once it completed; status and an Event say what the
	// deletion waits for. Off by default: deleting a cluster without it keeps no copy of
	// the data written since the last backup.
	// +optional
	FinalBackup bool `json:"finalBackup,omitempty"`
}
