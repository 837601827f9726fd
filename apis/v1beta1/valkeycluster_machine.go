package v1beta1

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
	// Clock names the operator incarnation whose clock Since was read from: times of
	// different incarnations are never compared.
	// +optional
	Clock string `json:"clock,omitempty"`
	// Shards records the primary the machine recognises for each shard (one in replication).
	// +optional
	Shards []ShardRecord `json:"shards,omitempty"`
	// PodsPerShard is the number of pods per shard (1 + replicas) the machine works towards,
	// recorded when a change of spec.replicas is accepted (0: recorded by an older operator).
	// +optional
	PodsPerShard int32 `json:"podsPerShard,omitempty"`
	// Operation holds the step markers of the operation in progress.
	// +optional
	Operation *OperationRecord `json:"operation,omitempty"`
	// Restored is the ID of the last completed restore.
	// +optional
	Restored string `json:"restored,omitempty"`
	// Rotation is the password rotation in progress.
	// +optional
	Rotation *RotationRecord `json:"rotation,omitempty"`
	// Rotated is the ID of the last completed password rotation.
	// +optional
	Rotated string `json:"rotated,omitempty"`
	// Certificate is the serial of the serving certificate every node that serves TLS was last
	// seen to serve (certificate-reloaded).
	// +optional
	Certificate string `json:"certificate,omitempty"`
}

// RotationRecord is a password rotation in progress (see docs/security.md).
type RotationRecord struct {
	// ID is the request (the rotate-passwords annotation's value).
	ID string `json:"id"`
	// Users are the rotated users, comma-separated.
	Users string `json:"users"`
	// Phase is Adding (the new passwords are given to every node beside the old ones),
	// Published (clients read the new ones; the old ones work until the grace period ends)
	// or Retiring (the old ones are being removed).
	Phase string `json:"phase"`
	// PublishedAt is when the new passwords were published: the grace period starts then.
	// +optional
	PublishedAt *metav1.MicroTime `json:"publishedAt,omitempty"`
	// PublishedClock is the operator incarnation whose clock PublishedAt was read from.
	// +optional
	PublishedClock string `json:"publishedClock,omitempty"`
}

// ShardRecord is who the machine recognises as a shard's primary: only that process is ever
// opened for writes, and only its replication history counts as the shard's data.
type ShardRecord struct {
	// Primary is the pod of the recognised primary.
	Primary string `json:"primary,omitempty"`
	// RunID is the Valkey process the record is about; a restarted primary is another process.
	RunID string `json:"runID,omitempty"`
	// History identifies the primary's replication history (master_replid, and the history
	// it continues: master_replid2 up to second_repl_offset).
	History ReplicationHistory `json:"history,omitempty"`
	// Epoch counts primary changes of the shard.
	Epoch int64 `json:"epoch,omitempty"`
	// ClaimEpoch is the newest config epoch seen on a claim of the shard's slots (topology
	// Cluster), and ClaimNode the cluster-bus ID of the node that made it: a failover opens its
	// candidate only once the candidate's claim is newer (docs/cluster.md).
	ClaimEpoch int64  `json:"claimEpoch,omitempty"`
	ClaimNode  string `json:"claimNode,omitempty"`
	// Deposed lists the pods of the shard whose volumes may hold writes off its line: the
	// primary an unplanned failover replaced, until it is seen resynced (docs/failover.md).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Deposed []DeposedPod `json:"deposed,omitempty"`
}

// DeposedPod is a pod whose volume may hold writes off its shard's line.
type DeposedPod struct {
	Pod string `json:"pod"`
	// Keys is the key count of the node elected to replace it: how far into the line its
	// data can reach.
	// +optional
	Keys int64 `json:"keys,omitempty"`
	// Left is where the line left its data: the elected node's history and its offset + 1 at
	// the election.
	// +optional
	Left *HistoryLink `json:"left,omitempty"`
	// Resyncing: it was asked to follow the recorded primary and is not yet seen on the line.
	// +optional
	Resyncing bool `json:"resyncing,omitempty"`
	// ResyncKeys is its key count when it was asked to follow: with more it holds the line.
	// +optional
	ResyncKeys int64 `json:"resyncKeys,omitempty"`
}

// ReplicationHistory identifies a replication history.
type ReplicationHistory struct {
	// ID is the replication ID (master_replid).
	ID string `json:"id,omitempty"`
	// PrevID is the replication ID this history continues (master_replid2), if any.
	PrevID string `json:"prevID,omitempty"`
	// PrevEnd is the offset up to which PrevID is continued (second_repl_offset).
	PrevEnd int64 `json:"prevEnd,omitempty"`
	// PrevRestarted: this history's offsets started again at 0 from data holding prevID up to
	// prevEnd (a node restarted from its append-only file, elected by key count), so every
	// node of it holds prevID up to prevEnd whatever its own offset.
	// +optional
	PrevRestarted bool `json:"prevRestarted,omitempty"`
	// Older continues the chain beyond prevID, nearest first: the histories this data
	// continued, which Valkey itself forgets when a node restarts.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Older []HistoryLink `json:"older,omitempty"`
}

// HistoryLink is one earlier replication history: its id and the offset where it ended.
type HistoryLink struct {
	ID  string `json:"id"`
	End int64  `json:"end"`
	// Restarted: the history continuing this one started its offsets again at 0 (see
	// prevRestarted).
	// +optional
	Restarted bool `json:"restarted,omitempty"`
}

// OperationRecord is what the machine must remember about the operation in progress because
// the world cannot tell it: whom it replaces, whom it elected, what the goal is.
type OperationRecord struct {
	// Shard is the shard a failover or switchover is about.
	Shard int32 `json:"shard,omitempty"`
	// Lost is the pod of the primary being replaced.
	Lost string `json:"lost,omitempty"`
	// LostRunID is the Valkey run ID of the primary being replaced.
	LostRunID string `json:"lostRunID,omitempty"`
	// LostHistory is the lost primary's replication history: candidates must continue it.
	LostHistory ReplicationHistory `json:"lostHistory,omitempty"`
	// Writer and WriterRunID name the process that may still accept writes for the shard
	// (the lost primary or, after a hand-over began, its target) and must be fenced first.
	Writer      string `json:"writer,omitempty"`
	WriterRunID string `json:"writerRunID,omitempty"`
	// HandOver is the node a planned hand-over moves the primary role to.
	HandOver string `json:"handOver,omitempty"`
	// TargetPods is, for a hand-over that makes room for a scale-down, the pod count per
	// shard it makes room for (0 for a switchover the user asked for).
	TargetPods int32 `json:"targetPods,omitempty"`
	// Leaving is true for a hand-over away from a primary whose pod is being deleted.
	// +optional
	Leaving bool `json:"leaving,omitempty"`
	// Rollout is true for a hand-over before a rollout restarts the primary's pod (the
	// Sentinel topology, whose sentinels carry it out).
	// +optional
	Rollout bool `json:"rollout,omitempty"`
	// Planned is true for a requested switchover (a hand-over), false for a failover.
	Planned bool `json:"planned,omitempty"`
	// Candidate is the elected node, once its election has been recorded.
	Candidate string `json:"candidate,omitempty"`
	// Unpromoted is true from the election of a node that was a replica then until its
	// promotion (its new history) is recorded.
	// +optional
	Unpromoted bool `json:"unpromoted,omitempty"`
	// ElectedAt is the time of the observation in which the candidate was elected; an
	// isolated old primary may accept writes until the fence timeout after it, not later.
	ElectedAt *metav1.MicroTime `json:"electedAt,omitempty"`
	// ElectedClock names the operator incarnation whose clock ElectedAt was read from; another
	// incarnation restarts the fence wait on its own clock.
	// +optional
	ElectedClock string `json:"electedClock,omitempty"`
	// FenceFrom, when set, is the seal of the last replica, before the election: every node
	// visible at the election had been sealed with no connection to any primary, so the fence
	// timeout runs from it (on ElectedClock).
	// +optional
	FenceFrom *metav1.MicroTime `json:"fenceFrom,omitempty"`
	// KnownFenced is true when the old primary can no longer accept writes, so no fence
	// timeout is needed.
	KnownFenced bool `json:"knownFenced,omitempty"`
	// Reseed is true when no node held the shard's data any more and a new, empty history
	// was started: a data loss the machine states explicitly.
	Reseed bool `json:"reseed,omitempty"`
	// Preempted is the planned operation a failover interrupted.
	Preempted State `json:"preempted,omitempty"`
	// Wake is true while a bootstrap wakes a hibernated cluster: every pod must answer
	// before a shard's first node is chosen.
	Wake bool `json:"wake,omitempty"`
	// WakeFrom names, per shard and separated by spaces ("-" where none), the node a
	// hibernated shard wakes from: its primary when the pods stopped, with client writes
	// closed and its replicas caught up.
	// +optional
	WakeFrom string `json:"wakeFrom,omitempty"`
	// Target is the goal of a planned operation: the revision being rolled out, the restore
	// request, or the switchover target pod.
	Target string `json:"target,omitempty"`
	// TargetShards is the number of shards a resharding aims for.
	TargetShards int32 `json:"targetShards,omitempty"`
	// Snapshot is the backup a restore reads from.
	Snapshot string `json:"snapshot,omitempty"`
	// GiveBack is true while a restore can still give the cluster back as it was if its
	// snapshot is refused: it was asked of a serving cluster and no shard has loaded it yet.
	GiveBack bool `json:"giveBack,omitempty"`
	// TakenOver is true for a failover of the Sentinel topology the operator carries out
	// itself, because no sentinel can.
	// +optional
	TakenOver bool `json:"takenOver,omitempty"`
}
