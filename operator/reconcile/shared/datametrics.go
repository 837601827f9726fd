package shared

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// NodeMetrics exports what the last survey of each cluster read of its nodes (the data-plane
// metrics of docs/observability.md): no sidecar, no second connection, and a pod that is gone
// is gone from the next scrape. Names follow redis_exporter's (valkey_ instead of redis_) where
// it has the same quantity; every series has the labels namespace, cluster, pod and shard.
type NodeMetrics struct {
	mu       sync.Mutex
	clusters map[types.NamespacedName][]nodeSample
}

// nodeSample is one node as last surveyed.
type nodeSample struct {
	pod, shard, role, version string
	up                        bool
	stats                     valkey.Stats
	openSlots                 int
	// lagBytes and lagSeconds are a replica's lag behind its primary (-1: unknown).
	lagBytes, lagSeconds int64
}

var nodeLabels = []string{"namespace", "cluster", "pod", "shard"}

func nodeDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string(nil), nodeLabels...), extra...), nil)
}

var (
	descUp            = nodeDesc("valkey_up", "1 when the node answered the operator's last survey, 0 when it did not.")
	descInfo          = nodeDesc("valkey_instance_info", "Always 1: the node's role (primary, replica) and Valkey version.", "role", "version")
	descClients       = nodeDesc("valkey_connected_clients", "Client connections (replicas excluded).")
	descBlocked       = nodeDesc("valkey_blocked_clients", "Clients in a blocking call.")
	descRejected      = nodeDesc("valkey_rejected_connections_total", "Connections refused because of maxclients.")
	descMemUsed       = nodeDesc("valkey_memory_used_bytes", "Memory allocated by Valkey (used_memory).")
	descMemMax        = nodeDesc("valkey_memory_max_bytes", "maxmemory (0: no limit).")
	descEvicted       = nodeDesc("valkey_evicted_keys_total", "Keys evicted because of maxmemory.")
	descExpired       = nodeDesc("valkey_expired_keys_total", "Keys deleted because their TTL ran out.")
	descCommands      = nodeDesc("valkey_commands_processed_total", "Commands processed.")
	descOps           = nodeDesc("valkey_instantaneous_ops_per_sec", "Commands per second, as Valkey samples it.")
	descDBKeys        = nodeDesc("valkey_db_keys", "Keys per database (databases that hold keys).", "db")
	descDBExpiring    = nodeDesc("valkey_db_keys_expiring", "Keys with a TTL per database.", "db")
	descOffset        = nodeDesc("valkey_master_repl_offset", "The node's replication offset (master_repl_offset).")
	descReplicas      = nodeDesc("valkey_connected_replicas", "Replicas connected to a primary.")
	descLagBytes      = nodeDesc("valkey_replica_lag_bytes", "How far a replica's offset is behind its primary's, in bytes (replicas only).")
	descLagSeconds    = nodeDesc("valkey_replica_lag_seconds", "Seconds since a replica last acknowledged, as its primary sees it (replicas only).")
	descLinkUp        = nodeDesc("valkey_master_link_up", "1 when a replica's link to its primary is up (replicas only).")
	descLastIO        = nodeDesc("valkey_master_last_io_seconds_ago", "Seconds since a replica last heard from its primary (replicas with a link only).")
	descRDBStatus     = nodeDesc("valkey_rdb_last_bgsave_status", "1 when the last RDB save succeeded.")
	descRDBLastSave   = nodeDesc("valkey_rdb_last_save_timestamp_seconds", "Unix time of the last successful RDB save.")
	descAOFRewrite    = nodeDesc("valkey_aof_last_bgrewrite_status", "1 when the last AOF rewrite succeeded (AOF enabled only).")
	descAOFWrite      = nodeDesc("valkey_aof_last_write_status", "1 when the last AOF write succeeded (AOF enabled only).")
	descClusterState  = nodeDesc("valkey_cluster_state", "1 when the node's CLUSTER INFO says ok (cluster mode).")
	descSlotsAssigned = nodeDesc("valkey_cluster_slots_assigned", "Slots with a primary, in the node's view (cluster mode).")
	descSlotsOK       = nodeDesc("valkey_cluster_slots_ok", "Slots whose primary is not failing, in the node's view (cluster mode).")
	descSlotsPFail    = nodeDesc("valkey_cluster_slots_pfail", "Slots whose primary the node suspects (cluster mode).")
	descSlotsFail     = nodeDesc("valkey_cluster_slots_fail", "Slots whose primary the cluster agrees is failing (cluster mode).")
	descKnownNodes    = nodeDesc("valkey_cluster_known_nodes", "Nodes the node knows on the cluster bus (cluster mode).")
	descOpenSlots     = nodeDesc("valkey_cluster_open_slots", "Slots the node has open: importing or migrating (cluster mode).")
	allNodeDescs      = []*prometheus.Desc{descUp, descInfo, descClients, descBlocked, descRejected, descMemUsed, descMemMax, descEvicted, descExpired, descCommands, descOps, descDBKeys, descDBExpiring, descOffset, descReplicas, descLagBytes, descLagSeconds, descLinkUp, descLastIO, descRDBStatus, descRDBLastSave, descAOFRewrite, descAOFWrite, descClusterState, descSlotsAssigned, descSlotsOK, descSlotsPFail, descSlotsFail, descKnownNodes, descOpenSlots}
)

// Describe sends every metric's description.
func (m *NodeMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allNodeDescs {
		ch <- d
	}
}

// Collect sends the last survey of every cluster.
func (m *NodeMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, nodes := range m.clusters {
		for _, n := range nodes {
			collectNode(ch, key, n)
		}
	}
}

func collectNode(ch chan<- prometheus.Metric, key types.NamespacedName, n nodeSample) {
	lv := []string{key.Namespace, key.Name, n.pod, n.shard}
	gauge := func(d *prometheus.Desc, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(append([]string(nil), lv...), extra...)...)
	}
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
	}
	gauge(descUp, BoolValue(n.up))
	if !n.up {
		return
	}
	s := n.stats
	gauge(descInfo, 1, n.role, n.version)
	gauge(descClients, float64(s.ConnectedClients))
	gauge(descBlocked, float64(s.BlockedClients))
	counter(descRejected, s.RejectedConnections)
	gauge(descMemUsed, float64(s.UsedMemory))
	gauge(descMemMax, float64(s.MaxMemory))
	counter(descEvicted, s.EvictedKeys)
	counter(descExpired, s.ExpiredKeys)
	counter(descCommands, s.CommandsProcessed)
	gauge(descOps, s.OpsPerSecond)
	for _, db := range s.DBs {
		gauge(descDBKeys, float64(db.Keys), db.DB)
		gauge(descDBExpiring, float64(db.Expiring), db.DB)
	}
	gauge(descOffset, float64(s.ReplicationOffset))
	if n.role == string(machine.RolePrimary) {
		gauge(descReplicas, float64(len(s.Replicas)))
	} else {
		gauge(descLinkUp, BoolValue(s.PrimaryLinkUp))
		if s.PrimaryLastIO >= 0 {
			gauge(descLastIO, float64(s.PrimaryLastIO))
		}
		if n.lagBytes >= 0 {
			gauge(descLagBytes, float64(n.lagBytes))
		}
		if n.lagSeconds >= 0 {
			gauge(descLagSeconds, float64(n.lagSeconds))
		}
	}
	gauge(descRDBStatus, BoolValue(s.RDBLastSaveOK))
	gauge(descRDBLastSave, float64(s.RDBLastSave))
	if s.AOFEnabled {
		gauge(descAOFRewrite, BoolValue(s.AOFLastRewriteOK))
		gauge(descAOFWrite, BoolValue(s.AOFLastWriteOK))
	}
	if c := s.Cluster; c != nil {
		gauge(descClusterState, BoolValue(c.StateOK))
		gauge(descSlotsAssigned, float64(c.SlotsAssigned))
		gauge(descSlotsOK, float64(c.SlotsOK))
		gauge(descSlotsPFail, float64(c.SlotsPFail))
		gauge(descSlotsFail, float64(c.SlotsFail))
		gauge(descKnownNodes, float64(c.KnownNodes))
		gauge(descOpenSlots, float64(n.openSlots))
	}
}

func BoolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// record replaces a cluster's nodes with this turn's survey: nodes are the machine's
// observation, stats what each answering node's survey read (by pod name).
func (m *NodeMetrics) Record(key types.NamespacedName, nodes []machine.Node, stats map[string]valkey.Stats) {
	byIP := map[string]*machine.Node{}
	for i := range nodes {
		if nodes[i].Pod.IP != "" && nodes[i].Reachable {
			byIP[nodes[i].Pod.IP] = &nodes[i]
		}
	}
	samples := make([]nodeSample, 0, len(nodes))
	for _, n := range nodes {
		if !n.Pod.Exists {
			continue
		}
		st, surveyed := stats[n.Name]
		s := nodeSample{pod: n.Name, shard: strconv.Itoa(n.Shard), role: string(n.Valkey.Role), version: n.Valkey.Version,
			up: n.Reachable && surveyed, stats: st, openSlots: len(n.Valkey.OpenSlots), lagBytes: -1, lagSeconds: -1}
		if p := byIP[n.Valkey.PrimaryHost]; s.up && n.Valkey.Role == machine.RoleReplica && p != nil {
			ps := stats[p.Name]
			if lag := ps.ReplicationOffset - st.ReplicationOffset; lag >= 0 {
				s.lagBytes = lag
			}
			for _, r := range ps.Replicas {
				if r.IP == n.Pod.IP {
					s.lagSeconds = r.Lag
				}
			}
		}
		samples = append(samples, s)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.clusters == nil {
		m.clusters = map[types.NamespacedName][]nodeSample{}
	}
	m.clusters[key] = samples
}

// forget drops a deleted cluster's nodes.
func (m *NodeMetrics) Forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.clusters, key)
}
