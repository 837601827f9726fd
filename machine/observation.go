package machine

import (
	"strings"
	"time"
)

// Observation is everything Decide knows about the world at one moment: the desired spec and
// what each pod and Valkey node answered. It is a plain value; the operator builds it from
// Kubernetes objects and INFO replication / CLUSTER answers, the simulator from its world.
type Observation struct {
	// Time is when the observation was taken, supplied by the caller (the machine never reads
	// a clock). Observations of one cluster must carry strictly increasing times: the machine
	// takes at most one transition per observation (see Decide) and ignores older ones.
	Time time.Time
	// Clock names the clock Time was read from: the operator process (incarnation) that took
	// the observation. Times of different clocks are never compared: a new leader's clock may
	// be behind or ahead of the one before it.
	Clock string
	Spec  Spec
	// Objects is what the owned Kubernetes objects currently ask for.
	Objects Objects
	// Passwords is what the auth Secret publishes (password rotation).
	Passwords PasswordsObject
	// Nodes holds one entry per pod that exists or existed recently, in any order. A pod that
	// is missing from the list is unknown to the machine.
	Nodes []Node
	// ClaimsBeyond lists the data claims older than the cluster (kept from a deleted cluster
	// of the same name) on places the objects do not ask for: ordinals beyond the spec's pods
	// per shard, or shards beyond the spec's. Such a claim may hold a shard's newest data (a
	// cluster re-created smaller than the one deleted); a first bootstrap starts it before it
	// elects (see keptPods, keptShards).
	ClaimsBeyond []Claim `json:",omitempty"`
	// IdleClaims lists the data claims, of any age, whose pods do not exist on places the
	// objects do not ask for: a scale-down's deletion of a claim can lag or fail; a scale-up
	// starts a pod on such a claim, data and all. A failover cannot weigh them, so whatever
	// they hold beyond the node it elects is off the line from then on (deposeIdleClaims).
	IdleClaims []Claim `json:",omitempty"`
	// Sentinels is what each sentinel answered about the cluster's primary (ModeSentinel).
	Sentinels []Sentinel `json:",omitempty"`
}

// Sentinel is one sentinel as the operator's survey found it (SENTINEL MASTER of the
// cluster's group).
type Sentinel struct {
	// Name is the sentinel's pod name, IP its address and ID its id (SENTINEL MYID): actions
	// on a sentinel name the process they were decided for, as data nodes' actions name a run
	// id.
	Name string
	IP   string `json:",omitempty"`
	ID   string `json:",omitempty"`
	// Revision is the revision of the pod template the sentinel's pod was made from (""
	// without a pod); Terminating: the pod is being deleted (its sentinel may still answer
	// for a few seconds, but is on its way out); PodReady: the pod's Ready condition (its
	// readiness probe passed since it started: what a PodDisruptionBudget counts).
	Revision    string `json:",omitempty"`
	Terminating bool   `json:",omitempty"`
	PodReady    bool   `json:",omitempty"`
	// Reachable: the sentinel answered this round. When false the rest must not be read.
	Reachable bool
	// Monitoring: it monitors the cluster's group (false: it was never told to, or it started
	// from a template that does not name it).
	Monitoring bool
	// PrimaryIP is the address it gives for the primary (GET-MASTER-ADDR-BY-NAME): the
	// promoted replica's as soon as a failover it leads reconfigures the replicas.
	PrimaryIP string
	// ConfigEpoch is the group's config epoch in its view: the epoch of the failover that
	// chose PrimaryIP (0: none since it was told to monitor).
	ConfigEpoch uint64
	// FailingOver: its flags for the group say failover_in_progress (it leads a failover,
	// until the replicas are reconfigured); PrimaryDown: they say o_down (a quorum of the
	// sentinels find the primary it names down).
	FailingOver bool
	PrimaryDown bool
	// Peers is how many other sentinels it knows for the group (num-other-sentinels): one a
	// re-created sentinel replaced (a new id) stays among them until the group is reset.
	Peers int `json:",omitempty"`
	// Settings are the group's settings in its view (quorum, down-after-milliseconds,
	// failover-timeout, parallel-syncs); zero when it does not monitor the group.
	Settings SentinelSettings `json:",omitempty"`
	// Replicas are the replicas it knows for the group (SENTINEL REPLICAS), with the
	// replica-priority it last read from each one's INFO: what its pick of a SENTINEL
	// FAILOVER goes by. Sorted by address.
	Replicas []SentinelReplica `json:",omitempty"`
}

// SentinelReplica is a replica as a sentinel knows it: its address and the replica-priority
// it last read from its INFO (0: never picked).
type SentinelReplica struct {
	IP       string
	Priority int
	// ReportsPrimary is true when the role the sentinel last read from the replica's INFO
	// (role-reported) is master: a node that was a primary, or restarted, since.
	ReportsPrimary bool
}

// SentinelSettings are the settings every sentinel monitors the group with.
type SentinelSettings struct {
	// Quorum is how many sentinels must find the primary down before a failover starts (the
	// leader still needs a majority of the sentinels' votes).
	Quorum int
	// DownAfterMillis is down-after-milliseconds: how long a node may not answer before a
	// sentinel finds it down.
	DownAfterMillis int64
	// FailoverTimeoutMillis is failover-timeout: a failover's steps time out after it, and a
	// new attempt waits twice it.
	FailoverTimeoutMillis int64
	// ParallelSyncs is how many replicas a failover re-points at once.
	ParallelSyncs int
}

// Claim is a pod's data claim: the pod it is for, by name and place.
type Claim struct {
	Name    string
	Shard   int
	Ordinal int
}

// Objects summarises the owned StatefulSets: how many shards and pods they ask for and the
// revision of their pod template.
type Objects struct {
	Shards int
	// Replicas is the replicas per shard the StatefulSets ask for (pods - 1); StoppedReplicas
	// when they ask for no pod at all (a hibernated cluster).
	Replicas int
	Revision string
	// Sentinels is how many sentinels the sentinels' StatefulSet asks for (ModeSentinel; 0
	// before it exists, and in the other modes), SentinelRevision the revision of its pod
	// template.
	Sentinels        int    `json:",omitempty"`
	SentinelRevision string `json:",omitempty"`
}

// StoppedReplicas is Objects.Replicas (and EnsureObjects.Replicas) of StatefulSets that run no
// pod: every claim is kept (a hibernated cluster).
const StoppedReplicas = -1

// Mode is how the shards of a cluster are organised.
type Mode string

const (
	// ModeReplication is one primary with replicas; Shards is 1 and there are no slots.
	ModeReplication Mode = "replication"
	// ModeCluster is Valkey cluster mode: Shards primaries, each owning a range of hash slots.
	ModeCluster Mode = "cluster"
	// ModeSentinel is one primary with replicas watched by Valkey Sentinel: the sentinels'
	// quorum decides failovers, the machine records what they decided (sentinel.go) and never
	// promotes a node after the bootstrap.
	ModeSentinel Mode = "sentinel"
)

// Spec is the summary of the desired state the machine needs.
type Spec struct {
	// Generation is metadata.generation of the ValkeyCluster (for messages and journaling).
	Generation int64
	Mode       Mode
	// Shards is the number of primaries (1 in replication mode).
	Shards int
	// Replicas is the number of replicas per shard.
	Replicas int
	// Revision identifies the pod template; a pod with another revision must be rolled.
	Revision string
	// Persistence says whether nodes write their data to a volume that survives restarts.
	Persistence bool
	// FsyncAlways says that nodes hand every write to the kernel and fsync it before they
	// acknowledge it (appendfsync always). Only then does a node restarted from its
	// append-only file after a process crash hold every write it acknowledged. With
	// everysec (Valkey's default) the write to the file is postponed while a background
	// fsync runs, up to two seconds, and replies go out meanwhile: a SIGKILL loses writes
	// the node acknowledged and a replica (even a WAIT) may hold.
	FsyncAlways bool
	// MinSyncReplicas is the write guarantee: nodes run with min-replicas-to-write set to it
	// and clients that need durability use WAIT MinSyncReplicas. Failover relies on it twice:
	// an isolated primary stops accepting writes once fewer replicas follow it, and a write
	// acknowledged by WAIT is on that many replicas, so seeing all but MinSyncReplicas-1
	// replicas is enough to find it.
	MinSyncReplicas int
	// FailureThreshold is how many consecutive failed probes make an unreachable primary lost.
	FailureThreshold int
	// FenceTimeout is how long an isolated primary may still accept writes after its replicas
	// stopped following it (min-replicas-max-lag plus a margin). A promoted replica only opens
	// for writes after it, unless the old primary is known dead or fenced.
	FenceTimeout time.Duration
	// Switchover asks for a planned hand-over of one shard's primary role (nil: none).
	Switchover *Switchover
	// Restore asks for every shard to be reloaded from a snapshot (nil: none).
	Restore *RestoreRequest
	// RefusedLoad says that a load of restore request ID was refused for what its snapshot
	// holds (its files changed after the check); zero: none was. It is not part of Restore:
	// the spec may name another restore by then, or none, and the one under way must still
	// not be loaded again.
	RefusedLoad RefusedLoad
	// StorageBytes is the size every data volume must have at least (0: not managed).
	StorageBytes int64
	// BootstrapFrom names the pod whose data a bootstrap starts from when the nodes' data
	// cannot be ordered safely (forked histories, a node with an old volume that never
	// answers): the user's explicit decision that the other nodes' data is discarded. Read
	// only in Bootstrapping; "" lets the machine elect.
	BootstrapFrom string
	// FailoverWithout names pods the user gives up for a failover: while they are unseen they
	// do not count against the quorum (a node lost with the primary may hold WAIT-acknowledged
	// writes no other node has; without them the failover waits for them). The user's explicit
	// decision that writes only they hold are lost; the election records it.
	FailoverWithout []string
	// Rotation asks for passwords to be replaced (nil: none); see rotation.go.
	Rotation *RotationRequest
	// RotationGrace is how long the old passwords keep working once the new ones are
	// published.
	RotationGrace time.Duration
	// RetireNow ends the grace period of the rotation in progress at once (the user's word
	// that every client has moved over).
	RetireNow bool
	// Certificate is the serial of the serving certificate in the cluster's TLS Secret, once
	// it passed the operator's checks ("": no TLS, or none usable); see certificate.go.
	Certificate string
	// Hibernate asks for every pod to stop with the data kept on the claims (see
	// hibernation.go); false wakes a hibernated cluster.
	Hibernate bool
	// Sentinels is how many sentinels the cluster runs (ModeSentinel): a majority of them
	// naming one primary with one config epoch is what the sentinels decided.
	Sentinels int
	// SentinelSettings are what every sentinel monitors the group with (ModeSentinel).
	SentinelSettings SentinelSettings
	// SentinelRevision identifies the sentinels' pod template (ModeSentinel); a sentinel
	// whose pod has another revision must be restarted (sentineltemplate.go).
	SentinelRevision string
	// CloseWrites keeps every recorded primary closed to client writes while replication
	// goes on (see closewrites.go): the cluster is being deleted and waits for its final
	// backup, which must hold every write a primary acknowledged.
	CloseWrites bool
}

// Switchover names the node that should become the primary of a shard.
type Switchover struct {
	Shard int
	To    string
}

// RestoreRequest asks for a restore. ID identifies the request so a completed restore is not
// repeated; Snapshot names what to load; Shards is how many shards the snapshot holds: it
// restores only into a cluster of as many (reshard first otherwise).
type RestoreRequest struct {
	ID       string
	Snapshot string
	Shards   int
	// Pending says why the restore cannot start yet (its snapshot is being verified, or was
	// refused): a running cluster keeps serving meanwhile, and a bootstrapping one waits, wired
	// but closed to writes, rather than open before the snapshot it is to hold is loaded.
	// A restore whose load was refused (Spec.RefusedLoad) is Pending too, with the reason.
	Pending string
}

// RefusedLoad is a load of restore request ID refused for what its snapshot holds, and why.
type RefusedLoad struct {
	ID, Why string
}

// Role is the replication role a node reports.
type Role string

const (
	RolePrimary Role = "primary"
	RoleReplica Role = "replica"
)

// Node is one pod and, when it answered, its Valkey process.
type Node struct {
	// Name is the pod name; it is the stable identity of a node (StatefulSet ordinal).
	Name    string
	Shard   int
	Ordinal int
	Pod     Pod
	// Reachable is true when the operator's survey got answers from the Valkey process this
	// round. When false, Valkey below is the zero value and must not be read.
	Reachable bool
	// FailedProbes counts consecutive failed surveys of this node (0 when Reachable).
	FailedProbes int
	Valkey       Valkey
}

// NotStarting is why the node's container does not start ("" when it answers, or when its
// pod has no failure to tell): a node that answers is not held back by an older failure.
func (n Node) NotStarting() string {
	if n.Reachable {
		return ""
	}
	return n.Pod.StartError
}

// NotStarting lists the nodes that do not start, with Valkey's reason ("" when none).
func NotStarting(nodes []Node) string {
	var out []string
	for _, n := range nodes {
		if why := n.NotStarting(); why != "" {
			out = append(out, n.Name+" does not start: "+why)
		}
	}
	return strings.Join(out, "; ")
}

// Pod is what Kubernetes says about a node's pod.
type Pod struct {
	// Exists is false when the pod object is missing (deleted, not yet created).
	Exists bool
	// Running is false while the container is not running (restarting, pending).
	Running  bool
	Ready    bool
	IP       string
	Revision string
	// VolumeFromBefore is true when the pod's data volume is older than the cluster (the
	// claim was kept from a deleted cluster of the same name): it may hold data, so a
	// bootstrap waits for the node before it chooses where the data comes from.
	VolumeFromBefore bool
	// VolumeBytes is the size the pod's data claim asks for (0: unknown, no claim).
	VolumeBytes int64
	// Restarted is true when the pod's container is no longer the one whose process last
	// answered a survey (its container restarted, as Kubernetes reports at once) and the new
	// process does not answer yet: the process last seen is gone. Without it a restart that
	// beat the survey waited for the next probe to be seen (a write gap of up to a probe
	// interval more).
	Restarted bool
	// Terminating is true once the pod's deletion was asked for (a kubectl delete, an
	// eviction by a drain, a StatefulSet that removes it): its process still runs, held by its
	// preStop hook while it is a primary with replicas, so that its primary role can be handed
	// over before it stops (primary-leaving).
	Terminating bool
	// StartError is why the container does not start, when its last run failed and it is not
	// ready since (a crash-looping container runs for a moment between back-offs, so
	// "running" alone does not clear it): the end of its output (Valkey's own error, e.g. a
	// FATAL CONFIG FILE ERROR).
	StartError string
}

// Valkey is what a reachable node reported (INFO replication, INFO server, ACL, CLUSTER).
type Valkey struct {
	// RunID changes every time the process starts: a different RunID is a restart.
	RunID string
	Role  Role
	// ReplID, ReplID2 and SecondOffset are master_replid, master_replid2 and
	// second_repl_offset; Offset is master_repl_offset. Together they say which replication
	// history the node's data belongs to (see lineage.go).
	ReplID       string
	ReplID2      string
	Offset       int64
	SecondOffset int64
	// Keys is the number of keys the node holds (INFO keyspace, every database). Offsets
	// alone cannot say whether a node holds data: a node restarted from its append-only file
	// comes back with its data under a fresh ID at offset 0, exactly as an empty node does
	// (Valkey keeps the replication ID and offset only in RDB files), and a replica that
	// full-synced from such a node sits at offset 0 until writes stream.
	Keys int64
	// Digest is a digest of the node's data ("" when unknown), asked only of a node that holds
	// keys but no place in a history (offset 0) while client writes are fenced: the one node
	// whose data neither its offset nor anything else measures, at the bootstrap of a cluster
	// re-created on kept volumes. Equal digests of the same kind mean the same data. It starts
	// with its kind and a colon ("debug:" for DEBUG DIGEST, "dump:" for the operator's own);
	// digests of different kinds are not compared.
	Digest string `json:",omitempty"`
	// KeyHashes are the survey's hashes of the node's keys, each with its value and expiry,
	// sorted (nil: not read). Read only where Digest is, and within the same bounds. They do
	// not leave the turn (CompareKeys turns them into KeysCompared and KeysWithin, which the
	// journal keeps): a hundred thousand keys are 800 kB.
	KeyHashes []uint64 `json:"-"`
	// KeysCompared: the node's keys were read and compared with those of every other node of
	// its shard whose keys were read (CompareKeys).
	KeysCompared bool `json:",omitempty"`
	// KeysWithin names the nodes of the shard, keys compared, that hold every key of this
	// node with the same value (CompareKeys).
	KeysWithin []string `json:",omitempty"`
	// KeySlots are the hash slots that hold keys (cluster mode; CLUSTER COUNTKEYSINSLOT), read
	// only of a primary that serves no slots and holds keys: whose slots its keys are, when
	// nodes that are no pod any more serve them (ghostkeys.go). nil: not read.
	KeySlots []SlotRange `json:",omitempty"`
	// PrimaryHost is master_host for a replica ("" when it follows nothing).
	PrimaryHost string
	// PrimaryID is the cluster ID of the node a replica follows (cluster mode; CLUSTER NODES).
	// A replica whose primary came back on an empty volume at the same address still follows
	// the old ID: it does not follow the pod at PrimaryHost (see ReadClusterBus).
	PrimaryID string
	// LinkUp is master_link_status:up for a replica.
	LinkUp bool
	// HeardFromPrimary: the link is up and the replica heard from its primary within the last
	// 2 s (master_last_io_seconds_ago; primaries ping their replicas every second, as the
	// operator configures them). It is the replicas' view that confirms a primary the operator
	// cannot reach is really gone.
	HeardFromPrimary bool
	Loading          bool
	// WritesFenced: clients cannot write (the application ACL user is off). Nodes start so.
	WritesFenced bool
	// OtherUsers: the node has users besides the operator's own (ValkeyACL users), or did not
	// say (ACL USERS refused). The application user off does not stop them, so on a primary
	// WritesFenced is then no proof that it takes no writes.
	OtherUsers bool
	// SyncFenced: replicas cannot sync from it (the replication ACL user is off). Nodes start
	// so, which is what keeps a restarted, empty node from wiping its replicas.
	SyncFenced bool
	// HeldBack: a replica at replica-priority 0 while its replication user is on (HoldBack,
	// the Sentinel topology's planned hand-over): no sentinel picks it. Converge gives it its
	// priority back once the hand-over is over.
	HeldBack bool `json:",omitempty"`
	// Snapshot is the restore request ID whose snapshot this node's data was loaded from.
	Snapshot string
	// Slots are the hash slots the node serves as a primary (cluster mode).
	Slots []SlotRange
	// Joined is true once the node is part of the cluster bus (cluster mode).
	Joined bool
	// Version is the server's version (valkey_version of INFO server), e.g. "9.1.2".
	Version string
	// SlotsSeen is how many hash slots have a primary in the node's own view of the cluster
	// (cluster mode): a client that asks this node for the slot map gets those.
	SlotsSeen int
	// NodeID is the node's own ID on the cluster bus (cluster mode; CLUSTER MYID), kept in
	// nodes.conf on its volume: a pod re-created on its claim is the same node, one started on
	// an empty volume a new one.
	NodeID string
	// ConfigEpoch is the epoch of the node's claim on the slots it serves (cluster mode; its
	// own line of CLUSTER NODES). Where two nodes claim a slot the higher epoch wins, wherever
	// and whenever the two claims meet: a failover in cluster mode opens its candidate only
	// once its claim is newer than any other the operator has seen for the shard.
	ConfigEpoch uint64
	// Known are the other nodes in the node's own view of the cluster bus (cluster mode; nodes
	// still in handshake left out). The operator's observer compares their addresses with the
	// pods' (a node that knows a pod only at an address it no longer has is not joined: it
	// must be introduced again); the machine looks for IDs that no pod is (ghosts).
	Known []KnownNode
	// ReplicationWidened: the replication user has the rules an Atomic Slot Migration gives it
	// (see the operator's actuators). Read by the operator only, to take them back.
	ReplicationWidened bool
	// ClusterOK is cluster_state:ok in the node's CLUSTER INFO (cluster mode): it serves its
	// slots. A primary says fail for 2 s after it starts even with every slot covered.
	ClusterOK bool
	// OpenSlots are the slots the node has open (cluster mode): migrating to another node, or
	// importing from one, as a classic migration that did not finish leaves them.
	OpenSlots []OpenSlot
	// Passwords is what the node answered about the passwords of a rotation in progress.
	Passwords PasswordState
	// CertificateSerial is the serial of the certificate the node serves on a fresh TLS
	// handshake ("": it serves no TLS, or was not asked).
	CertificateSerial string
	// Sealed: the operator replaced the node's replication password (Seal), so that it can
	// start no new link to any primary. Zero when it is not sealed.
	Sealed SealRecord
}

// SealRecord is when a node was sealed and what it was doing then (see Seal).
type SealRecord struct {
	// At is a moment at or after the seal took effect on the node, read on Clock (the
	// operator incarnation that sealed it).
	At    time.Time
	Clock string
	// Unlinked: at the seal the node had no link to any primary and no handshake past the
	// password (ROLE said "connect" or "connecting"). No primary has had an acknowledgement
	// from it since, nor can a handshake started before the seal be counted by one after.
	Unlinked bool
}

// KnownNode is another node as one node's view of the cluster bus lists it.
type KnownNode struct {
	ID string
	IP string
	// Slots is how many slots it serves in that view, Ranges which.
	Slots  int
	Ranges []SlotRange
	// Connected: that node has a live cluster-bus link to it (a process answers as that ID).
	Connected bool
	// ConfigEpoch is the epoch of that node's claim as this view has it.
	ConfigEpoch uint64
}

// OpenSlot is a slot a node has open: Importing from the node at Peer (an IP), or migrating to
// it.
type OpenSlot struct {
	Slot      int
	Peer      string
	Importing bool
}

// SlotRange is an inclusive range of hash slots.
type SlotRange struct {
	Start, End int
}

// NumSlots is the number of hash slots of a Valkey cluster.
const NumSlots = 16384
