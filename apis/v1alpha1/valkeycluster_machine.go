package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// MachineStatus is the state machine's memory: together with status.state it is the input
// of the next decision, written (with the transition that changed it) before any action is
// taken. It mirrors the machine's Persisted value; users read it for diagnosis, never write it.
type MachineStatus struct {
	// Seq is the sequence number of the last transition (status.history and the journal).
	Seq int64 `json:"seq,omitempty"`
	// Since is the time of the observation that caused the last transition; the machine takes
	// at most one transition per observation, so a re-delivered one changes nothing.
	// Microsecond precision: fence timeouts are measured from these times.
	Since *metav1.MicroTime `json:"since,omitempty"`
	// Shards records the primary the machine recognises for each shard (one in replication).
	// +optional
	Shards []ShardRecord `json:"shards,omitempty"`
	// Operation holds the step markers of the operation in progress.
	// +optional
	Operation *OperationRecord `json:"operation,omitempty"`
	// Restored is the ID of the last completed restore.
	// +optional
	Restored string `json:"restored,omitempty"`
}

// ShardRecord is who the machine recognises as a shard's primary: only that process is ever
// opened for writes, and only its replication history counts as the shard's data.
type ShardRecord struct {
	Primary string `json:"primary,omitempty"`
	// RunID is the Valkey process the record is about; a restarted primary is another process.
	RunID string `json:"runID,omitempty"`
	// History identifies the primary's replication history (master_replid, and the history
	// it continues: master_replid2 up to second_repl_offset).
	History ReplicationHistory `json:"history,omitempty"`
	// Epoch counts primary changes of the shard.
	Epoch int64 `json:"epoch,omitempty"`
}

// ReplicationHistory identifies a replication history.
type ReplicationHistory struct {
	ID      string `json:"id,omitempty"`
	PrevID  string `json:"prevID,omitempty"`
	PrevEnd int64  `json:"prevEnd,omitempty"`
}

// OperationRecord is what the machine must remember about the operation in progress because
// the world cannot tell it: whom it replaces, whom it elected, what the goal is.
type OperationRecord struct {
	Shard        int                `json:"shard,omitempty"`
	Lost         string             `json:"lost,omitempty"`
	LostRunID    string             `json:"lostRunID,omitempty"`
	LostHistory  ReplicationHistory `json:"lostHistory,omitempty"`
	Planned      bool               `json:"planned,omitempty"`
	Candidate    string             `json:"candidate,omitempty"`
	ElectedAt    *metav1.MicroTime       `json:"electedAt,omitempty"`
	KnownFenced  bool               `json:"knownFenced,omitempty"`
	Reseed       bool               `json:"reseed,omitempty"`
	Preempted    State              `json:"preempted,omitempty"`
	Target       string             `json:"target,omitempty"`
	TargetShards int                `json:"targetShards,omitempty"`
	Snapshot     string             `json:"snapshot,omitempty"`
}
