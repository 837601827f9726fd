package machine

import (
	"context"
	"fmt"
)

// Action is one thing the actuators must do, as plain data. Every action is idempotent and
// safe to repeat: the machine re-derives the actions from each observation, so an action
// that failed, or was lost in an operator crash, is simply decided again. Actions aimed at a
// Valkey process embed its Target (target.go).
type Action interface {
	// Kind names the action (kebab-case, for logs, metrics and the simulator's trace).
	Kind() string
	String() string
}

// EnsureObjects creates or updates the owned Kubernetes objects (StatefulSets, Services,
// ConfigMap, Secret, PDB) for Shards shards of 1+Replicas pods at Revision. Pods are updated
// with the OnDelete strategy: changing Revision never restarts a pod, RollPod does.
//
// The machine asks for fewer pods per shard (a StatefulSet removes the highest ordinals) only
// once every pod being removed is a replica of a primary that stays. Before it shrinks a
// StatefulSet the actuator must check that none of the pods it removes answers as a primary
// (ROLE) and refuse otherwise, as actions aimed at a process refuse another run id: the
// decision was taken when it was a replica, and a person may have run FAILOVER TO since. A pod
// it cannot reach does not stop it. It must also check that each process in Keep (the shards'
// recorded primaries, named on a shrink) still runs and answers: the pods a shrink removes may
// hold the only other copies of the shard's writes, and a primary that restarted since the
// decision may have come back empty (found by the simulator: a scale-down decided with a
// healthy primary and carried out after it restarted without its data removed the last copies
// of a WAIT-acknowledged write).
type EnsureObjects struct {
	Shards   int
	Replicas int
	Revision string
	// Sentinels is how many sentinels the sentinels' StatefulSet runs (ModeSentinel; 0 in
	// the other modes): the machine changes it by one at a time (sentinelscale.go).
	// SentinelRevision is the revision of its pod template, which (OnDelete, as the data
	// pods') reaches a sentinel when RollSentinel restarts it.
	Sentinels        int    `json:",omitempty"`
	SentinelRevision string `json:",omitempty"`
	Keep             []Proc
}

// Proc names one process: a node and its run id.
type Proc struct {
	Node  string
	RunID string
}

// Objects is what the action asks the objects to be.
func (a EnsureObjects) Objects() Objects {
	return Objects{Shards: a.Shards, Replicas: a.Replicas, Revision: a.Revision, Sentinels: a.Sentinels, SentinelRevision: a.SentinelRevision}
}

// Promote makes Node the primary of its shard: REPLICAOF NO ONE, then let replicas sync from
// it (replication ACL user on). Client writes stay fenced until OpenWrites. In cluster mode a
// replica takes its primary's slots over (CLUSTER FAILOVER TAKEOVER, a new epoch); a primary
// that serves slots gets an epoch above every one it has heard of (CLUSTER BUMPEPOCH, nothing
// when its own is the highest), so that its claim is newer than any made behind its back.
type Promote struct {
	Target
}

// Detach stops a replica from following the lost primary without changing its data or its
// replication ID (kill the master link and revoke the replication credentials), so its
// offset freezes and can be compared with the others before one of them is promoted.
type Detach struct {
	Target
}

// Seal replaces a replica's replication password with one no primary accepts, without
// touching its link, its data or whom it follows, and records when (Valkey.Sealed): from then
// on it can start no new link, so an unreachable primary it lost its link to gets no
// acknowledgement from it after the seal. Decided while a shard's primary does not answer,
// for the replicas whose link is down; the fence wait of a failover can then start at the
// seal instead of the election. Unseal (or a ReplicaOf, which sets the password) undoes it.
type Seal struct {
	Target
}

// Unseal gives a sealed replica its replication password back (its primary answers again).
type Unseal struct {
	Target
}

// Fence stops a node from accepting client writes and from serving replicas (both ACL users
// off). Used on a returning old primary and on any master that is not the recorded primary.
type Fence struct {
	Target
}

// CloseWrites stops a primary from accepting client writes (the application user off, its
// connections closed) and lets its replicas go on syncing: before a hibernation stops the
// pods, so that the replicas catch up with everything the primary acknowledged.
type CloseWrites struct {
	Target
}

// OpenWrites lets clients write to the recorded primary of a shard.
type OpenWrites struct {
	Target
}

// ReplicaOf points Node at the primary (REPLICAOF PrimaryIP port): re-pointing a replica after
// a failover or an IP change, demoting a fenced master, resyncing an empty node.
type ReplicaOf struct {
	Target
	Primary   string
	PrimaryIP string
	// PrimaryRunID is the primary's process when the action was decided. In cluster mode the
	// actuator refuses a primary that restarted since (CLUSTER REPLICATE follows a node ID: a
	// primary back on an empty volume is a new node, and a replica pointed at it would no
	// longer follow the node whose slots it must take over).
	PrimaryRunID string
}

// HandOver moves the primary role to a caught-up replica without losing writes:
// FAILOVER TO ToIP port on From. From becomes a replica of To.
type HandOver struct {
	Shard     int
	From      string
	FromRunID string
	To        string
	ToRunID   string
	ToIP      string
}

// RollPod deletes the pod so the StatefulSet recreates it at Revision. For a primary it is
// only decided after a HandOver, or when there is no replica to hand over to.
type RollPod struct {
	Shard    int
	Node     string
	Revision string
	// WithoutHandOver is true when a primary is restarted without a hand-over (no replica):
	// writes stop while it restarts, and without persistence its data is lost.
	WithoutHandOver bool
}

// AssignSlots makes the shard's primary own Slots (CLUSTER ADDSLOTSRANGE), at bootstrap.
type AssignSlots struct {
	Target
	Slots []SlotRange
}

// TakeSlotsOver makes Node, the shard's recorded primary (it serves no slots), claim Slots
// from From, a deposed node that still serves them with keys, with a config epoch newer than
// every one it knows (CLUSTER SETSLOT NODE to itself for each slot, then CLUSTER BUMPEPOCH).
// From's keys there are off the line: on hearing the newer claim it stops serving the slots.
// Valkey makes it Node's replica by itself when the two have the same shard id; otherwise it
// stays a primary serving none (Valkey 9.1 deletes its keys of those slots, 8.0 keeps them)
// until it is asked to resync from Node. Both run IDs are the processes the decision saw.
type TakeSlotsOver struct {
	Target
	From, FromRunID string
	Slots           []SlotRange
}

// AddNode joins a node to the cluster bus (CLUSTER MEET).
type AddNode struct {
	Target
}

// RemoveNode removes a node of a shard that is going away from the cluster bus
// (CLUSTER FORGET on every other node). EnsureObjects then deletes its pod. Its Target has no
// RunID: whichever process the node runs leaves.
type RemoveNode struct {
	Target
}

// ForgetNode removes a node that is no pod of the cluster (a ghost: the old ID of a pod that
// came back on an empty volume) from every node's view of the cluster bus (CLUSTER FORGET on
// each). It involves no pod.
type ForgetNode struct {
	ID string
	IP string
}

// MigrateSlots moves Slots with their keys from the primary of shard From to the primary of
// shard To (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE). Resumable: a slot left
// half-migrated is finished by the next MigrateSlots for it. FromRunID and ToRunID are the
// processes the decision saw: a source restarted since may hold less than the one decided on
// (found by the simulator: a source started empty after the decision handed its slots to the
// target without the WAIT-acknowledged write it had held), so the move is refused then.
type MigrateSlots struct {
	From, To           int
	FromNode, ToNode   string
	FromRunID, ToRunID string
	Slots              SlotRange
}

// ExpandVolumes grows the data volumes of Nodes to Bytes (their claims ask for less). It is
// independent of every other action and safe in any state: a volume only ever grows.
type ExpandVolumes struct {
	Nodes []string
	Bytes int64
}

// RestoreSnapshot replaces the data of Node with the shard's part of Snapshot and starts a new
// replication history on it; replicas then resync from it.
type RestoreSnapshot struct {
	Target
	Snapshot  string
	RequestID string
}

func (EnsureObjects) Kind() string   { return "ensure-objects" }
func (Promote) Kind() string         { return "promote" }
func (Detach) Kind() string          { return "detach" }
func (Fence) Kind() string           { return "fence" }
func (Seal) Kind() string            { return "seal" }
func (Unseal) Kind() string          { return "unseal" }
func (OpenWrites) Kind() string      { return "open-writes" }
func (CloseWrites) Kind() string     { return "close-writes" }
func (ReplicaOf) Kind() string       { return "replica-of" }
func (HandOver) Kind() string        { return "hand-over" }
func (RollPod) Kind() string         { return "roll-pod" }
func (AssignSlots) Kind() string     { return "assign-slots" }
func (TakeSlotsOver) Kind() string   { return "take-slots-over" }
func (AddNode) Kind() string         { return "add-node" }
func (RemoveNode) Kind() string      { return "remove-node" }
func (ForgetNode) Kind() string      { return "forget-node" }
func (MigrateSlots) Kind() string    { return "migrate-slots" }
func (RestoreSnapshot) Kind() string { return "restore-snapshot" }
func (ExpandVolumes) Kind() string   { return "expand-volumes" }

func (a EnsureObjects) String() string {
	sentinels := ""
	if a.Sentinels > 0 {
		sentinels = fmt.Sprintf(" sentinels=%d", a.Sentinels)
	}
	if a.SentinelRevision != "" {
		sentinels += " sentinel-revision=" + a.SentinelRevision
	}
	if a.Replicas == StoppedReplicas {
		return fmt.Sprintf("ensure-objects shards=%d stopped (no pod, claims kept) revision=%s%s", a.Shards, a.Revision, sentinels)
	}
	return fmt.Sprintf("ensure-objects shards=%d replicas=%d revision=%s%s", a.Shards, a.Replicas, a.Revision, sentinels)
}
func (a Promote) String() string    { return fmt.Sprintf("promote %s", a.Node) }
func (a Detach) String() string     { return fmt.Sprintf("detach %s", a.Node) }
func (a Fence) String() string      { return fmt.Sprintf("fence %s", a.Node) }
func (a Seal) String() string       { return fmt.Sprintf("seal %s", a.Node) }
func (a Unseal) String() string     { return fmt.Sprintf("unseal %s", a.Node) }
func (a OpenWrites) String() string { return fmt.Sprintf("open-writes %s", a.Node) }
func (a CloseWrites) String() string {
	return fmt.Sprintf("close-writes %s", a.Node)
}
func (a ReplicaOf) String() string {
	return fmt.Sprintf("replica-of %s -> %s (%s)", a.Node, a.Primary, a.PrimaryIP)
}
func (a HandOver) String() string { return fmt.Sprintf("hand-over %s -> %s", a.From, a.To) }
func (a RollPod) String() string {
	if a.WithoutHandOver {
		return fmt.Sprintf("roll-pod %s to %s without hand-over", a.Node, a.Revision)
	}
	return fmt.Sprintf("roll-pod %s to %s", a.Node, a.Revision)
}
func (a AssignSlots) String() string { return fmt.Sprintf("assign-slots %s %v", a.Node, a.Slots) }
func (a TakeSlotsOver) String() string {
	return fmt.Sprintf("take-slots-over %s %v from %s", a.Node, a.Slots, a.From)
}
func (a AddNode) String() string    { return fmt.Sprintf("add-node %s", a.Node) }
func (a RemoveNode) String() string { return fmt.Sprintf("remove-node %s", a.Node) }
func (a ForgetNode) String() string {
	if a.IP == "" {
		return fmt.Sprintf("forget-node %s (no address)", a.ID)
	}
	return fmt.Sprintf("forget-node %s (%s)", a.ID, a.IP)
}
func (a MigrateSlots) String() string {
	return fmt.Sprintf("migrate-slots %d-%d shard %d (%s) -> shard %d (%s)", a.Slots.Start, a.Slots.End, a.From, a.FromNode, a.To, a.ToNode)
}
func (a ExpandVolumes) String() string {
	return fmt.Sprintf("expand-volumes %v to %d bytes", a.Nodes, a.Bytes)
}
func (a RestoreSnapshot) String() string {
	return fmt.Sprintf("restore-snapshot %s into %s", a.Snapshot, a.Node)
}

// Actuator carries out the machine's actions and nothing else: every field of an action is
// what it applies. Two implementations exist, the simulated world (machine/sim) and the
// operator's real actuators (operator/reconcile/cluster over actuators/kube and
// actuators/valkey), and one table (machine/conformance) checks that they agree.
type Actuator interface {
	Apply(ctx context.Context, a Action) error
}
