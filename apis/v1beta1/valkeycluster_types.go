package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Topology is how the pods of a ValkeyCluster are arranged. The enum lists only the
// topologies the operator runs today.
// +kubebuilder:validation:Enum=Standalone;Replication;Sentinel;Cluster
type Topology string

const (
	// TopologyStandalone is one Valkey server and nothing else: no replica, no failover.
	TopologyStandalone Topology = "Standalone"
	// TopologyReplication is one primary and replicas that follow it; the operator promotes
	// a replica when the primary is lost.
	TopologyReplication Topology = "Replication"
	// TopologySentinel is one primary and replicas watched by Valkey Sentinel: the sentinels'
	// quorum fails the primary over, clients ask the sentinels where it is, and the operator
	// records what they decided and keeps them right (docs/sentinel.md).
	TopologySentinel Topology = "Sentinel"
	// TopologyCluster is Valkey cluster mode: the hash slots are split over shards, each a
	// primary with replicas; clients must be cluster-aware (they follow MOVED and ASK).
	TopologyCluster Topology = "Cluster"
)

// Profile is what the data is for, and so how Valkey keeps it: evicted or refused when memory
// is full, and whether it is written to disk.
// +kubebuilder:validation:Enum=Cache;Durable
type Profile string

const (
	// ProfileCache evicts the least recently used keys when memory is full
	// (maxmemory-policy allkeys-lru) and writes nothing to disk: a restarted pod starts
	// empty and re-syncs from the primary.
	ProfileCache Profile = "Cache"
	// ProfileDurable refuses writes when memory is full (maxmemory-policy noeviction) rather
	// than drop data, and persists with both RDB snapshots and the append-only file.
	ProfileDurable Profile = "Durable"
)

// State is a state of the ValkeyCluster state machine.
// +kubebuilder:validation:Enum=Bootstrapping;Steady;FailingOver;Rolling;Resharding;Restoring;Hibernated
type State string

const (
	// StateBootstrapping: pods, volumes and replication are being created for the first time.
	StateBootstrapping State = "Bootstrapping"
	// StateSteady: every pod runs the desired spec and replicates from the recorded primary.
	StateSteady State = "Steady"
	// StateFailingOver: the primary was lost and a replica is being promoted in its place.
	StateFailingOver State = "FailingOver"
	// StateRolling: pods are being replaced one at a time (image, resources or config change).
	StateRolling State = "Rolling"
	// StateResharding: slots are moving between shards (sharded topologies only).
	StateResharding State = "Resharding"
	// StateRestoring: data is being restored from a backup.
	StateRestoring State = "Restoring"
	// StateHibernated: writes are closed and the pods stop (or have stopped); the claims keep
	// the data until spec.hibernate is false again.
	StateHibernated State = "Hibernated"
)

// NodeRole is the replication role a Valkey node reports for itself. PascalCase like every
// other enum of this version (v1alpha1 spelled it primary, replica, unknown).
// +kubebuilder:validation:Enum=Primary;Replica;Unknown
type NodeRole string

const (
	// NodeRolePrimary: the node accepts writes (ROLE answers master).
	NodeRolePrimary NodeRole = "Primary"
	// NodeRoleReplica: the node follows a primary (ROLE answers slave).
	NodeRoleReplica NodeRole = "Replica"
	// NodeRoleUnknown: the node did not answer the last survey.
	NodeRoleUnknown NodeRole = "Unknown"
)

// ConfigValue is the value of a valkey.conf directive, written after its name as given (so
// "normal 0 0 0" sets all three arguments of client-output-buffer-limit). It is one line:
// control characters such as a newline would start another directive in valkey.conf, past
// the check that refuses operator-owned ones.
// +kubebuilder:validation:MaxLength=1024
// +kubebuilder:validation:XValidation:rule="!self.matches('[\\x00-\\x1f\\x7f]')",message="config values must be one line: remove newlines, tabs and other control characters"
type ConfigValue string

// ValkeyClusterSpec is the desired state of a ValkeyCluster. Every field is optional: an
// empty spec is a Durable replication group of one primary and one replica, with
// authentication, persistent volumes, a PodDisruptionBudget and pods spread over zones and
// hosts.
//
// +kubebuilder:validation:XValidation:rule="!has(self.durability) || !has(self.durability.minReplicasToWrite) || self.durability.minReplicasToWrite <= (has(self.replicas) ? self.replicas : (has(self.topology) && self.topology == 'Standalone' ? 0 : 1))",message="durability.minReplicasToWrite is more than spec.replicas (the replicas of each primary; 0 for Standalone, 1 by default otherwise): lower it, or raise spec.replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.topology) || self.topology != 'Standalone' || !has(self.replicas) || self.replicas == 0",message="a Standalone ValkeyCluster is one server with no replica: remove spec.replicas, or use topology Replication to have replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.topology) || self.topology != 'Cluster' || ((has(self.tls) && has(self.tls.mode) && self.tls.mode != 'Disabled') == (has(oldSelf.tls) && has(oldSelf.tls.mode) && oldSelf.tls.mode != 'Disabled'))",message="a Cluster topology cannot turn TLS on or off once created: its cluster bus speaks TLS (tls-cluster) or not on every node at once, and nodes of both kinds cannot gossip, so no roll can move it; create the cluster with spec.tls (PlainAndTLS or TLSOnly; between those two it can move), or restore a backup into a new cluster"
// +kubebuilder:validation:XValidation:rule="!has(self.hibernate) || !self.hibernate || !has(self.profile) || self.profile == 'Durable'",message="hibernate stops every pod, and only the Durable profile keeps data across a stop (a Cache cluster would come back empty): remove spec.hibernate, or delete the cluster if its data is not needed"
// +kubebuilder:validation:XValidation:rule="!((has(self.hibernate) && self.hibernate) || (has(oldSelf.hibernate) && oldSelf.hibernate)) || ((has(self.replicas) ? self.replicas : (has(self.topology) && self.topology == 'Standalone' ? 0 : 1)) == (has(oldSelf.replicas) ? oldSelf.replicas : (has(oldSelf.topology) && oldSelf.topology == 'Standalone' ? 0 : 1)) && (has(self.shards) ? self.shards : 0) == (has(oldSelf.shards) ? oldSelf.shards : 0) && has(self.image) == has(oldSelf.image) && (!has(self.image) || self.image == oldSelf.image))",message="spec.hibernate is set and cleared alone, and a hibernated cluster keeps its replicas, shards and image: change them once status.state is Steady again"
// +kubebuilder:validation:XValidation:rule="!has(self.sentinel) || (has(self.topology) && self.topology == 'Sentinel')",message="spec.sentinel is for topology Sentinel: remove it, or set topology to Sentinel (on a new ValkeyCluster: topology is immutable)"
// +kubebuilder:validation:XValidation:rule="!has(self.topology) || self.topology != 'Sentinel' || !has(self.config) || !self.config.exists(k, k.lowerAscii() in ['replica-priority', 'slave-priority'])",message="config sets replica-priority, which the operator owns in the Sentinel topology (0 on a node it has not opened as a sync source, so that no sentinel promotes a node that may lack data): remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.topology) || self.topology != 'Sentinel' || ((has(self.auth) && has(self.auth.enabled) ? self.auth.enabled : true) == (has(oldSelf.auth) && has(oldSelf.auth.enabled) ? oldSelf.auth.enabled : true))",message="auth.enabled cannot change in the Sentinel topology yet: each sentinel keeps the users it started with in its own file; create a new cluster with the setting it needs"
// +kubebuilder:validation:XValidation:rule="!has(self.topology) || self.topology != 'Sentinel' || (has(self.replicas) && self.replicas >= 1) || !has(self.replicas)",message="a Sentinel topology needs at least one replica: the sentinels fail the primary over to a replica, and with none they never can; set spec.replicas to 1 or more"
// +kubebuilder:validation:XValidation:rule="!has(self.topology) || self.topology != 'Sentinel' || !has(self.tls) || !has(self.tls.mode) || self.tls.mode == 'Disabled'",message="the Sentinel topology does not run TLS yet: its sentinels reach the data nodes in plain text; remove spec.tls, or use topology Replication for TLS"
// +kubebuilder:validation:XValidation:rule="!has(self.shards) || (has(self.topology) && self.topology == 'Cluster')",message="spec.shards is for topology Cluster: remove it, or set topology to Cluster (on a new ValkeyCluster: topology is immutable)"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.shards) || !has(self.shards) || self.shards == oldSelf.shards || ((has(self.replicas) ? self.replicas : (has(self.topology) && self.topology == 'Standalone' ? 0 : 1)) == (has(oldSelf.replicas) ? oldSelf.replicas : (has(oldSelf.topology) && oldSelf.topology == 'Standalone' ? 0 : 1)) && has(self.image) == has(oldSelf.image) && (!has(self.image) || self.image == oldSelf.image))",message="spec.shards changes alone: a resharding moves data between shards and must not run together with a change of replicas or image; apply the shard count first, then the other change once status.state is Steady again"
// +kubebuilder:validation:XValidation:rule="!has(self.restoreFrom) || (has(self.restoreFrom.discardCurrentData) && self.restoreFrom.discardCurrentData) || (has(oldSelf.restoreFrom) && (has(self.restoreFrom.backup) == has(oldSelf.restoreFrom.backup) && (!has(self.restoreFrom.backup) || self.restoreFrom.backup == oldSelf.restoreFrom.backup)) && (has(self.restoreFrom.path) == has(oldSelf.restoreFrom.path) && (!has(self.restoreFrom.path) || self.restoreFrom.path == oldSelf.restoreFrom.path)) && (has(self.restoreFrom.store) == has(oldSelf.restoreFrom.store) && (!has(self.restoreFrom.store) || (self.restoreFrom.store.bucket == oldSelf.restoreFrom.store.bucket && (has(self.restoreFrom.store.prefix) == has(oldSelf.restoreFrom.store.prefix) && (!has(self.restoreFrom.store.prefix) || self.restoreFrom.store.prefix == oldSelf.restoreFrom.store.prefix)) && (has(self.restoreFrom.store.endpoint) == has(oldSelf.restoreFrom.store.endpoint) && (!has(self.restoreFrom.store.endpoint) || self.restoreFrom.store.endpoint == oldSelf.restoreFrom.store.endpoint))))))",message="restoring into a running cluster replaces all of its data with the backup's and discards every write acknowledged since the backup was taken: if that is what you want, set spec.restoreFrom.discardCurrentData: true; otherwise restore into a new ValkeyCluster"
// +kubebuilder:validation:XValidation:rule="!has(self.deletion) || !has(self.deletion.finalBackup) || !self.deletion.finalBackup || has(self.backup)",message="deletion.finalBackup writes a last backup to spec.backup.store before the cluster is deleted: set spec.backup, or remove deletion.finalBackup"
type ValkeyClusterSpec struct {
	// Topology is how the pods are arranged. Standalone runs a single Valkey server (no
	// replica) with no failover. Replication runs one primary and replicas replicas that
	// follow it, and the operator promotes a replica when the primary is lost. Cluster runs
	// Valkey cluster mode: shards shards, each a primary and replicas replicas, the 16384
	// hash slots split evenly over the shards' primaries (see docs/cluster.md). Sentinel
	// runs a primary and replicas like Replication, watched by spec.sentinel's sentinels,
	// whose quorum fails the primary over; clients ask the sentinels for the primary
	// (docs/sentinel.md). Immutable:
	// changing the shape of a running data set is a migration, not an update.
	// +kubebuilder:default=Replication
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="topology is immutable: create a new ValkeyCluster to change it"
	// +optional
	Topology Topology `json:"topology,omitempty"`

	// Profile is what the data is for. Cache: maxmemory-policy allkeys-lru and no
	// persistence (no RDB snapshots, no append-only file), so a full cache evicts and a
	// restarted pod comes back empty and re-syncs. Durable: maxmemory-policy noeviction (a
	// full server refuses writes instead of dropping data) and both RDB snapshots and the
	// append-only file (fsynced every second unless config sets appendfsync). The operator
	// renders these directives; config cannot override them. Immutable: switching would silently change whether
	// data survives a restart.
	// +kubebuilder:default=Durable
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="profile is immutable: create a new ValkeyCluster to change it"
	// +optional
	Profile Profile `json:"profile,omitempty"`

	// Image is the container image that runs valkey-server. Changing it replaces the pods one
	// at a time, replicas first and the primary last (after a switchover).
	// +kubebuilder:default="valkey/valkey:8.0"
	// +kubebuilder:validation:MinLength=1
	// +optional
	Image string `json:"image,omitempty"`

	// Replicas is the number of replicas of each primary, the primary not counted: 2 is one
	// primary and two replicas (three pods; with topology Cluster, three pods per shard).
	// Unset, it follows the topology: 1 for Replication and Cluster (a primary and one
	// replica, the least that survives losing a pod), none for Standalone, which refuses
	// any other value. It is the scale subresource's count: kubectl scale --replicas sets it.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Shards is the number of shards of a Cluster topology: primaries that each serve an even
	// share of the 16384 hash slots, each with its replicas. Only for topology
	// Cluster, where it defaults to 3. Changing it reshards: new shards are created and
	// slots with their keys move to them, or the slots of the shards beyond the new count
	// move away before those shards are deleted.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=128
	// +optional
	Shards int32 `json:"shards,omitempty"`

	// Sentinel is the sentinels of topology Sentinel (only there; defaulted there: three
	// sentinels, a majority quorum, down after 5s).
	// +optional
	Sentinel *SentinelSpec `json:"sentinel,omitempty"`

	// Resources are the CPU and memory requests and limits of the valkey container. Unless
	// config sets maxmemory, the operator sets maxmemory to 60% of the memory limit, leaving
	// the rest for copy-on-write during snapshots, replication buffers and fragmentation;
	// with no memory limit it sets none, so set one. A memory limit is at least 32Mi, and no
	// request is above its limit.
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !('memory' in self.limits) || quantity(string(self.limits['memory'])).compareTo(quantity('32Mi')) >= 0",messageExpression="'resources.limits.memory is ' + string(self.limits['memory']) + ': Valkey needs at least 32Mi (its maxmemory is 60% of the limit), raise it'"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || ['cpu', 'memory'].all(r, !(r in self.limits) || !(r in self.requests) || quantity(string(self.requests[r])).compareTo(quantity(string(self.limits[r]))) <= 0)",message="a resource request is above its limit: lower resources.requests or raise resources.limits"
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Storage is the persistent volume of each pod. Every pod always gets a
	// PersistentVolumeClaim, never an emptyDir, even with the Cache profile: the volume also
	// holds the node's replication state, and a pod rescheduled with its data can resume
	// with a partial sync. Its size defaults by profile: 10Gi for Durable, 1Gi for Cache.
	// +kubebuilder:default={}
	// +optional
	Storage StorageSpec `json:"storage,omitempty"`

	// Auth is how clients and replicas authenticate.
	// +kubebuilder:default={}
	// +optional
	Auth AuthSpec `json:"auth,omitempty"`

	// TLS is how the nodes serve TLS (off by default). With the Cluster topology the cluster
	// bus uses TLS too, and TLS is chosen when the cluster is created.
	// +kubebuilder:default={}
	// +optional
	TLS TLSSpec `json:"tls,omitempty"`

	// Hibernate stops every pod and keeps the data on the claims (and the auth Secret): the
	// operator closes client writes, lets the replicas catch up, then scales every
	// StatefulSet to zero with its claims retained. Setting it back to false wakes the
	// cluster: the pods start on their claims and every acknowledged write is back. Only the
	// Durable profile keeps data across a stop. While hibernated, replicas and shards keep
	// their values. See docs/hibernation.md.
	// +optional
	Hibernate bool `json:"hibernate,omitempty"`

	// NetworkPolicy limits who reaches the pods (opt-in; docs/security.md).
	// +kubebuilder:default={}
	// +optional
	NetworkPolicy NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// Config holds extra valkey.conf directives, name to value, for example
	// maxmemory-samples: "10" or client-output-buffer-limit: "pubsub 64mb 16mb 60"; each
	// becomes the line "name value" in valkey.conf. Names are compared case-insensitively, as
	// Valkey does. Setting maxmemory here overrides the default derived from the memory
	// limit. The directives the operator sets itself, and relies on, are refused here: bind,
	// port, dir, dbfilename, appendonly, appendfilename, appenddirname, save,
	// maxmemory-policy, replicaof, slaveof, masterauth, masteruser, primaryauth, primaryuser,
	// requirepass, aclfile, user, cluster-enabled, cluster-config-file, daemonize, pidfile,
	// logfile, unixsocket, protected-mode, rename-command, include, bind-source-addr,
	// min-replicas-to-write, min-replicas-max-lag, min-slaves-to-write, min-slaves-max-lag,
	// repl-ping-replica-period, repl-ping-slave-period, cluster-port, cluster-announce-ip,
	// cluster-allow-replica-migration, cluster-replica-no-failover, cluster-slave-no-failover,
	// tls-port, tls-cert-file, tls-key-file, tls-ca-cert-file, tls-ca-cert-dir,
	// tls-replication, tls-cluster, tls-auth-clients, repl-diskless-load.
	// Persistence and eviction follow profile, authentication follows auth,
	// min-replicas-to-write and min-replicas-max-lag follow durability, the replication
	// ping confirms failovers, and a node keeps its data until a sync arrived whole
	// (repl-diskless-load disabled), which a refused restore relies on to give the
	// cluster back.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.lowerAscii() in ['bind', 'port', 'dir', 'dbfilename', 'appendonly', 'appendfilename', 'appenddirname', 'save', 'maxmemory-policy', 'replicaof', 'slaveof', 'masterauth', 'masteruser', 'primaryauth', 'primaryuser', 'requirepass', 'aclfile', 'user', 'cluster-enabled', 'cluster-config-file', 'daemonize', 'pidfile', 'logfile', 'unixsocket', 'protected-mode', 'rename-command', 'include', 'bind-source-addr', 'min-replicas-to-write', 'min-replicas-max-lag', 'min-slaves-to-write', 'min-slaves-max-lag', 'repl-ping-replica-period', 'repl-ping-slave-period', 'cluster-port', 'cluster-announce-ip', 'cluster-allow-replica-migration', 'cluster-replica-no-failover', 'cluster-slave-no-failover', 'tls-port', 'tls-cert-file', 'tls-key-file', 'tls-ca-cert-file', 'tls-ca-cert-dir', 'tls-replication', 'tls-cluster', 'tls-auth-clients', 'repl-diskless-load']))",messageExpression="'config sets ' + self.filter(k, k.lowerAscii() in ['bind', 'port', 'dir', 'dbfilename', 'appendonly', 'appendfilename', 'appenddirname', 'save', 'maxmemory-policy', 'replicaof', 'slaveof', 'masterauth', 'masteruser', 'primaryauth', 'primaryuser', 'requirepass', 'aclfile', 'user', 'cluster-enabled', 'cluster-config-file', 'daemonize', 'pidfile', 'logfile', 'unixsocket', 'protected-mode', 'rename-command', 'include', 'bind-source-addr', 'min-replicas-to-write', 'min-replicas-max-lag', 'min-slaves-to-write', 'min-slaves-max-lag', 'repl-ping-replica-period', 'repl-ping-slave-period', 'cluster-port', 'cluster-announce-ip', 'cluster-allow-replica-migration', 'cluster-replica-no-failover', 'cluster-slave-no-failover', 'tls-port', 'tls-cert-file', 'tls-key-file', 'tls-ca-cert-file', 'tls-ca-cert-dir', 'tls-replication', 'tls-cluster', 'tls-auth-clients', 'repl-diskless-load'])[0] + ', a directive the operator owns: remove it from spec.config (persistence follows spec.profile, authentication spec.auth, TLS spec.tls)'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'))",message="config names must be valkey.conf directive names: letters, digits, '-', '_' and '.', at most 128 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, self.filter(j, j.lowerAscii() == k.lowerAscii()).size() == 1)",message="config sets one directive in several spellings (hz and HZ, say): Valkey ignores the case of names and would apply whichever comes last; keep one"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.lowerAscii() in ['maxmemory', 'repl-backlog-size', 'client-query-buffer-limit', 'proto-max-bulk-len', 'active-defrag-ignore-bytes', 'stream-node-max-bytes']) || self[k].matches('^[0-9]+([kKmMgG][bB]?)?$'))",message="config maxmemory, repl-backlog-size, client-query-buffer-limit, proto-max-bulk-len, active-defrag-ignore-bytes and stream-node-max-bytes are memory sizes: write bytes, or a number with k, kb, m, mb, g or gb (100mb)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.lowerAscii() in ['hz', 'maxclients', 'timeout', 'tcp-keepalive', 'databases', 'maxmemory-samples', 'slowlog-max-len', 'latency-monitor-threshold', 'repl-timeout', 'busy-reply-threshold', 'maxmemory-eviction-tenacity']) || self[k].matches('^[0-9]+$'))",message="config hz, maxclients, timeout, tcp-keepalive, databases, maxmemory-samples, slowlog-max-len, latency-monitor-threshold, repl-timeout, busy-reply-threshold and maxmemory-eviction-tenacity take a whole number"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.lowerAscii() in ['activedefrag', 'dynamic-hz', 'lazyfree-lazy-eviction', 'lazyfree-lazy-expire', 'lazyfree-lazy-server-del', 'lazyfree-lazy-user-del', 'lazyfree-lazy-user-flush', 'appendfsync']) || (k.lowerAscii() == 'appendfsync' ? self[k] in ['always', 'everysec', 'no'] : self[k] in ['yes', 'no']))",message="config appendfsync takes always, everysec or no; activedefrag, dynamic-hz and the lazyfree-lazy-* directives take yes or no"
	// +optional
	Config map[string]ConfigValue `json:"config,omitempty"`

	// NodeSelector restricts the pods to nodes with these labels.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations let the pods run on nodes with matching taints.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity is the pods' node and pod affinity, as in a Pod spec.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// TopologySpreadConstraints say how the pods spread over failure domains. When empty the
	// operator spreads them over zones (topology.kubernetes.io/zone) and hosts
	// (kubernetes.io/hostname) with maxSkew 1, preferred rather than required
	// (ScheduleAnyway), so that losing one zone or host loses as few pods as possible and a
	// small cluster still schedules. Setting any constraint replaces both.
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// ImagePullPolicy is the valkey container's pull policy, as in a Pod spec (Kubernetes'
	// default when unset: Always for a :latest or untagged image, IfNotPresent otherwise).
	// Changing it rolls the pods, as any change of the pod template does.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ImagePullSecrets name Secrets in this namespace that hold credentials for the image's
	// registry, as in a Pod spec. Changing them rolls the pods, as any change of the pod
	// template does.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// PodLabels are added to every pod's labels (cost centres, mesh or policy selectors).
	// The labels the operator selects its pods by (app.kubernetes.io/name, instance and
	// managed-by, and everything under valkey.fsm.dev/) are refused: another value would
	// hide a pod from its own cluster. Changing them rolls the pods, as any change of the pod
	// template does (replicas first, each primary last after handing its role over): much
	// of what is set on pods is read only when a pod starts, and every pod keeps the labels
	// of the template it was made from.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/managed-by']) && !k.startsWith('valkey.fsm.dev/'))",messageExpression="'podLabels sets ' + self.filter(k, k in ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/managed-by'] || k.startsWith('valkey.fsm.dev/'))[0] + ', a label the operator selects its pods by (app.kubernetes.io/name, app.kubernetes.io/instance, app.kubernetes.io/managed-by and those under valkey.fsm.dev/): another value would hide a pod from its cluster; remove it, or use another key'"
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// PodAnnotations are added to every pod's annotations (scrape hints, mesh sidecar
	// settings). Annotations under valkey.fsm.dev/ are the operator's and refused. Changing
	// them rolls the pods, as any change of the pod template does.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('valkey.fsm.dev/'))",messageExpression="'podAnnotations sets ' + self.filter(k, k.startsWith('valkey.fsm.dev/'))[0] + ', an annotation under valkey.fsm.dev/, which the operator owns on its pods (revision, TLS): remove it, or use another key'"
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// PriorityClassName is the pods' PriorityClass, as in a Pod spec: a data store usually
	// ranks above the workloads that use it, so that they are preempted first. Changing it
	// rolls the pods, as any change of the pod template does.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// ServiceAccountName is the pods' ServiceAccount, as in a Pod spec (the namespace's
	// default account when unset). Valkey itself never calls the Kubernetes API, so the
	// account's token is not mounted into the pods (automountServiceAccountToken false): the
	// account is for what policies attach to it (image pull secrets, a workload identity).
	// Changing it rolls the pods, as any change of the pod template does.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Service shapes the client Services (<name> for writes, <name>-replicas for reads):
	// their type and annotations. The headless <name>-nodes Service that peers and the
	// operator use is not affected and stays headless. Changing them updates the Services
	// in place and rolls no pod: a Service keeps its cluster IP across a change of type, and
	// Kubernetes allocates the node ports.
	// +optional
	Service *ServiceSpec `json:"service,omitempty"`

	// PodDisruptionBudget protects the pods from voluntary disruptions such as node drains.
	// +kubebuilder:default={}
	// +optional
	PodDisruptionBudget PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`

	// Failover tunes how the operator detects a lost primary.
	// +kubebuilder:default={}
	// +optional
	Failover FailoverSpec `json:"failover,omitempty"`

	// Durability trades write availability for what a failover can lose. See
	// docs/failover.md for what each setting can and cannot lose.
	// +kubebuilder:default={}
	// +optional
	Durability DurabilitySpec `json:"durability,omitempty"`

	// Backup turns on backups to S3: where they go, a schedule and how many are kept. See
	// docs/backup.md.
	// +optional
	Backup *BackupSpec `json:"backup,omitempty"`

	// RestoreFrom loads a backup into the cluster: a new cluster loads it while it
	// bootstraps, before accepting any write; on a running cluster, setting or changing it
	// starts a restore, which discards every write acknowledged after the backup was taken,
	// and is refused unless restoreFrom.discardCurrentData says so. A restore of one source
	// is carried out once.
	// +optional
	RestoreFrom *RestoreSource `json:"restoreFrom,omitempty"`

	// Deletion says what happens when the ValkeyCluster is deleted.
	// +optional
	Deletion *DeletionSpec `json:"deletion,omitempty"`
}

// StorageSpec is the persistent volume each pod gets through a PersistentVolumeClaim.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.storageClassName) || (has(self.storageClassName) && self.storageClassName == oldSelf.storageClassName)",message="storage.storageClassName is immutable once set: create a new ValkeyCluster to move the data to another storage class"
type StorageSpec struct {
	// Size is the capacity of each pod's volume. It can grow but never shrink (Kubernetes
	// cannot shrink a PersistentVolumeClaim); growing needs a storage class that allows
	// volume expansion. Unset, it follows the profile: 10Gi for Durable (an append-only
	// file and snapshots of the data set, with room to rewrite them), 1Gi for Cache (the
	// replication state only).
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="storage.size must be greater than zero"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",messageExpression="'storage.size cannot shrink from ' + string(oldSelf) + ' to ' + string(self) + ': a PersistentVolumeClaim can only grow, so set a size of at least ' + string(oldSelf)"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName is the StorageClass of the volumes; empty means the cluster's default
	// class. Immutable once set: the volumes already exist in that class.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// AuthSpec is how clients and replicas authenticate to Valkey.
//
// +kubebuilder:validation:XValidation:rule="!has(self.passwordSecretRef) || !has(self.enabled) || self.enabled",message="auth.passwordSecretRef is set but auth.enabled is false: remove auth.passwordSecretRef, or set auth.enabled to true"
type AuthSpec struct {
	// Enabled requires a password from every client and replica (requirepass and
	// masterauth). When enabled without passwordSecretRef, the operator generates a random
	// password and keeps it in a Secret it owns. Disable it only on a network nobody else
	// can reach.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// PasswordSecretRef names a key of a Secret in the same namespace that holds the
	// password (key password unless set), for a password managed outside the operator.
	// Only allowed when auth is enabled.
	// +optional
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`

	// RotationGracePeriod is how long the old passwords keep working once a password
	// rotation has published the new ones (kubectl valkey rotate; a change of the password
	// in passwordSecretRef): the time clients have to reconnect with the new one. The
	// valkey.fsm.dev/retire-old-passwords annotation (kubectl valkey rotate --retire) ends it
	// early. A Go duration such as 10m.
	// +kubebuilder:default="10m"
	// +optional
	RotationGracePeriod *metav1.Duration `json:"rotationGracePeriod,omitempty"`
}

// FailoverSpec says how a lost primary is detected: the operator surveys every node each
// probe interval, and a primary that failed failureThreshold surveys in a row, and whose
// replicas lost their link to it too, is replaced. Detection takes about interval x threshold.
type FailoverSpec struct {
	// ProbeIntervalSeconds is how often every node is surveyed.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60
	// +optional
	ProbeIntervalSeconds int32 `json:"probeIntervalSeconds,omitempty"`
	// FailureThreshold is how many consecutive failed surveys make a primary lost.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=30
	// +optional
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
}

// DurabilitySpec sets Valkey's min-replicas-to-write and min-replicas-max-lag. With
// minReplicasToWrite >= 1 a primary that loses its replicas (a partition) stops accepting
// writes after maxLagSeconds, which bounds what it can accept that a failover would discard,
// and lets the operator open a promoted replica after maxLagSeconds + 2 s instead of waiting
// until the old primary is known dead. With 0 nothing bounds an isolated primary: the
// operator then opens a promoted replica only once the old primary is seen dead or fenced.
type DurabilitySpec struct {
	// MinReplicasToWrite is how many replicas must be connected and caught up (within
	// maxLagSeconds) for the primary to accept writes. Default: 1 for the Durable profile
	// with replicas, 0 otherwise.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReplicasToWrite *int32 `json:"minReplicasToWrite,omitempty"`
	// MaxLagSeconds is how far behind (seconds since its last acknowledgement) a replica may
	// be and still count for minReplicasToWrite.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60
	// +optional
	MaxLagSeconds int32 `json:"maxLagSeconds,omitempty"`
}

// PodDisruptionBudgetSpec is the PodDisruptionBudget the operator keeps for the pods.
type PodDisruptionBudgetSpec struct {
	// Enabled keeps a PodDisruptionBudget with maxUnavailable 1, so that a node drain never
	// takes more than one pod at a time. With a single pod it does not block a drain: a
	// Standalone cluster is unavailable while its pod moves.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// ValkeyClusterStatus is the observed state of a ValkeyCluster, and the memory of its state
// machine.
type ValkeyClusterStatus struct {
	// State is the current state of the cluster's state machine; empty until the operator
	// has reconciled the cluster once. Unlike the status of most operators, which only
	// reports, this field is the state machine's persisted input: the operator writes a
	// transition here before acting on it, and every reconcile (after a restart or a new
	// leader too) resumes from it. Do not edit it.
	// +optional
	State State `json:"state,omitempty"`

	// Phase is what the cluster is doing, in the words kubectl get shows: the state, except
	// that a planned hand-over of a primary (a requested switchover, a primary whose pod is
	// deleted or drained, a primary moved off a pod a scale-down removes) reads SwitchingOver,
	// where state reads FailingOver because the machine runs it with a failover's fences.
	// Derived from the state; automation that follows the machine reads state.
	// +optional
	Phase string `json:"phase,omitempty"`

	// ObservedGeneration is the metadata.generation of the spec the operator last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions hold one condition per state (Bootstrapping, Steady, FailingOver, Rolling,
	// Resharding, Restoring, Hibernated), exactly one of them True: the current state, with the event
	// that caused the last transition as its reason. Ready is True while the cluster serves
	// writes.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// History is the most recent state transitions, oldest first and newest last, with
	// sequence numbers increasing by one. The operator keeps a bounded number of them; the
	// full record is in the operator's journal (kubectl valkey history --full).
	// +listType=atomic
	// +optional
	History []HistoryEntry `json:"history,omitempty"`

	// Nodes is what each pod's Valkey server reported at the last survey.
	// +listType=map
	// +listMapKey=pod
	// +optional
	Nodes []NodeStatus `json:"nodes,omitempty"`

	// Sentinels is what each sentinel of a Sentinel topology answered at the last survey.
	// +listType=map
	// +listMapKey=pod
	// +optional
	Sentinels []SentinelStatus `json:"sentinels,omitempty"`

	// Primary is the name of the pod the operator recognises as the primary, the only one
	// open for writes.
	// +optional
	Primary string `json:"primary,omitempty"`

	// Progress describes the operation in progress in words (for example "rolling: 2 of 3
	// pods at the new revision"); empty in Steady with nothing to do.
	// +optional
	Progress string `json:"progress,omitempty"`

	// Waiting says what the operator is waiting for when nothing can progress (a node that
	// does not answer, a failover that is not safe yet); empty otherwise.
	// +optional
	Waiting string `json:"waiting,omitempty"`

	// Slots says, for topology Cluster, how many of the 16384 hash slots the recorded
	// primaries serve ("16384/16384"), and, after a comma, what is wrong with the rest
	// ("12288/16384, 4096 unserved").
	// +optional
	Slots string `json:"slots,omitempty"`

	// ShardCount is how many shards have a recorded primary (topology Cluster).
	// +optional
	ShardCount int32 `json:"shardCount,omitempty"`

	// Shards are the shards of a Cluster topology: primary and slots of each.
	// +listType=atomic
	// +optional
	Shards []ShardStatus `json:"shards,omitempty"`

	// ReadyNodes is "ready/desired" pods, for kubectl get.
	// +optional
	ReadyNodes string `json:"readyNodes,omitempty"`

	// Pods is the number of pods that exist (v1alpha1's status.replicas).
	// +optional
	Pods int32 `json:"pods,omitempty"`

	// ReadyPods is the number of pods whose Valkey server is ready (v1alpha1's
	// status.readyReplicas).
	// +optional
	ReadyPods int32 `json:"readyPods,omitempty"`

	// Replicas is the number of replicas each primary has now, counted like spec.replicas:
	// the scale subresource's current count (for kubectl scale and autoscalers). With
	// shards that differ, the fewest.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Selector selects the cluster's pods, as a label selector string: the scale
	// subresource's selector, with which an autoscaler finds the pods' metrics.
	// +optional
	Selector string `json:"selector,omitempty"`

	// ValkeyVersion is the version the nodes' servers report (INFO server); during a roll
	// between versions, every version seen, comma-separated, oldest first.
	// +optional
	ValkeyVersion string `json:"valkeyVersion,omitempty"`

	// Machine is the rest of the state machine's persisted input (see MachineStatus).
	// +optional
	Machine *MachineStatus `json:"machine,omitempty"`

	// FailingActions are the machine's actions that failed the last time they were tried,
	// with how many times in a row: each is tried again after a back-off that doubles from
	// the operator's retry interval up to a minute, while the operator keeps probing and
	// doing the actions that do not depend on it. An action the machine no longer decides
	// is dropped; one that succeeds is removed.
	// +optional
	FailingActions []FailingAction `json:"failingActions,omitempty"`

	// Restore is the last restore asked for by spec.restoreFrom and what became of it.
	// +optional
	Restore *RestoreStatus `json:"restore,omitempty"`

	// TLS is the serving certificate in spec.tls's Secret and the one each node serves, as
	// the operator saw it over a fresh TLS handshake (kubectl valkey certificate).
	// +optional
	TLS *TLSStatus `json:"tls,omitempty"`
}

// RestoreStatus is a restore's progress.
type RestoreStatus struct {
	// ID identifies the request (the backup's path in its store): a restore is carried out
	// once per ID.
	ID string `json:"id"`
	// Location is the backup's directory in its store.
	// +optional
	Location string `json:"location,omitempty"`
	// Phase is Verifying (the backup is checked before anything is touched), Refused (reason
	// says why; the cluster keeps serving), Verified (about to start), Restoring or Completed.
	// +optional
	Phase string `json:"phase,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// HistoriesOf is the restore (ID) whose data Histories name: the one under way, or else
	// the last one completed.
	// +optional
	HistoriesOf string `json:"historiesOf,omitempty"`
	// Store and Path are where the snapshot of the restore HistoriesOf names is, recorded when
	// it starts: a restore under way finishes from them even when restoreFrom changes or its
	// ValkeyBackup is deleted.
	// +optional
	Store *BackupStore `json:"store,omitempty"`
	// +optional
	Path string `json:"path,omitempty"`
	// Histories are the replication IDs of data loaded from that restore's snapshot or synced
	// from it since: how the operator tells, after a restart of its own or of a node, which
	// nodes hold the restored data (Valkey keeps a node's replication ID in its RDB and
	// append-only files). Kept to the newest few.
	// +optional
	Histories []string `json:"histories,omitempty"`
}

// FailingAction is one of the machine's actions that keeps failing.
type FailingAction struct {
	// Action is the action as the history and logs print it (e.g. "replica-of demo-2 -> demo-0").
	Action string `json:"action"`
	// Count is how many times in a row it failed.
	Count int32 `json:"count"`
	// LastError is why it failed the last time.
	LastError string `json:"lastError"`
	// RetryAt is when it is tried again (if the machine still decides it).
	RetryAt metav1.Time `json:"retryAt"`
}

// HistoryEntry is one state transition of the cluster.
type HistoryEntry struct {
	// Seq is the transition's sequence number, one more than the previous transition's.
	Seq int64 `json:"seq"`

	// Time is when the transition was recorded.
	Time metav1.Time `json:"time"`

	// From is the state before the transition; empty for the first one.
	// +optional
	From State `json:"from,omitempty"`

	// To is the state after the transition.
	To State `json:"to"`

	// Event is the event that caused the transition, in kebab-case (for example
	// primary-lost).
	Event string `json:"event"`

	// Reason is the event in CamelCase, as in the conditions (for example PrimaryLost).
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message says in words what happened.
	// +optional
	Message string `json:"message,omitempty"`
}

// ShardStatus is one shard of a Cluster topology.
type ShardStatus struct {
	// Index is the shard's number: its StatefulSet is <name>-s<index>.
	Index int32 `json:"index"`
	// Primary is the pod the operator recognises as the shard's primary.
	// +optional
	Primary string `json:"primary,omitempty"`
	// Slots are the hash slots the primary serves, as ranges ("0-5460").
	// +optional
	Slots string `json:"slots,omitempty"`
}

// NodeStatus is one pod's Valkey server as the operator last surveyed it.
type NodeStatus struct {
	// Pod is the name of the pod.
	Pod string `json:"pod"`

	// IP is the pod's IP address.
	// +optional
	IP string `json:"ip,omitempty"`

	// Role is the replication role the server reports.
	Role NodeRole `json:"role"`

	// Shard is the shard of the pod (topology Cluster).
	// +optional
	Shard int32 `json:"shard,omitempty"`

	// ReplicationOffset is the server's replication offset (master_repl_offset).
	// +optional
	ReplicationOffset int64 `json:"replicationOffset,omitempty"`

	// Lag is how many bytes of the replication stream this node is behind the primary;
	// 0 for the primary.
	// +optional
	Lag int64 `json:"lag,omitempty"`

	// Ready is true when the server answers and, for a replica, its link to the primary is up
	// and its initial sync is done.
	// +optional
	Ready bool `json:"ready,omitempty"`
}

// ValkeyCluster is a Valkey deployment managed by the valkey-operator: a standalone server or
// a primary with replicas, with automatic failover, rolling updates and a recorded history of
// every state change (status.history, kubectl valkey history).
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=vkc,categories=valkey,scope=Namespaced
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="What the cluster is doing: its state, with a planned hand-over of a primary shown as SwitchingOver"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`,priority=1,description="State of the cluster's state machine"
// +kubebuilder:printcolumn:name="Topology",type=string,JSONPath=`.spec.topology`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.valkeyVersion`,description="Valkey version the nodes run"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.readyNodes`,description="Ready pods / desired pods"
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=`.status.primary`,description="Pod of the recognised primary"
// +kubebuilder:printcolumn:name="Shards",type=integer,JSONPath=`.status.shardCount`,priority=1,description="Shards with a recorded primary (topology Cluster)"
// +kubebuilder:printcolumn:name="Slots",type=string,JSONPath=`.status.slots`,priority=1,description="Hash slots served by the recorded primaries (topology Cluster)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec.topology) || self.spec.topology != 'Cluster' || self.metadata.name.size() <= 47",message="a Cluster topology's name must be at most 47 characters: each shard's StatefulSet is the name plus -s and the shard number, and the pods' controller-revision-hash label adds 11 characters to it, at most 63"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52",message="the name must be at most 52 characters: the pods' controller-revision-hash label is the name plus 11 characters, and label values are at most 63"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="the name must start with a letter and hold only lowercase letters, digits and '-' (not at the end): it names the cluster's Services, which must be DNS-1035 labels"
type ValkeyCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the cluster.
	// +kubebuilder:default={}
	// +optional
	Spec ValkeyClusterSpec `json:"spec"`

	// Status is the observed state of the cluster and the persisted state of its state
	// machine; written by the operator only.
	// +optional
	Status ValkeyClusterStatus `json:"status,omitempty"`
}

// ValkeyClusterList is a list of ValkeyClusters.
//
// +kubebuilder:object:root=true
type ValkeyClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the ValkeyClusters.
	Items []ValkeyCluster `json:"items"`
}
