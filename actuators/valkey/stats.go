package valkey

import (
	"sort"
	"strconv"
	"strings"
)

// Stats are what a survey reads of a node beyond what the machine needs: the figures the
// operator exports as metrics (docs/observability.md). They come with the survey's own INFO,
// so exporting them costs no extra round trip and no sidecar.
type Stats struct {
	ConnectedClients    int64
	BlockedClients      int64
	RejectedConnections int64 // counter
	UsedMemory          int64
	MaxMemory           int64 // 0: no limit
	EvictedKeys         int64 // counter
	ExpiredKeys         int64 // counter
	CommandsProcessed   int64 // counter
	OpsPerSecond        float64
	// DBs are the databases that hold keys, with their keys and the keys with a TTL.
	DBs []DBKeys
	// ReplicationOffset is master_repl_offset (a replica's: how far it has applied).
	ReplicationOffset int64
	// Replicas are a primary's connected replicas (INFO replication slaveN lines).
	Replicas []ReplicaLink
	// PrimaryLinkUp and PrimaryLastIO are a replica's master_link_status and
	// master_last_io_seconds_ago (-1: never).
	PrimaryLinkUp bool
	PrimaryLastIO int64
	// RDBLastSaveOK, AOFLastRewriteOK and AOFLastWriteOK are the last persistence outcomes;
	// RDBLastSave the Unix time of the last successful save.
	RDBLastSaveOK, AOFLastRewriteOK, AOFLastWriteOK bool
	AOFEnabled                                      bool
	RDBLastSave                                     int64
	// Cluster is CLUSTER INFO (cluster mode only).
	Cluster *ClusterStats
}

// DBKeys is one database of INFO keyspace.
type DBKeys struct {
	DB             string
	Keys, Expiring int64
}

// ReplicaLink is one connected replica as its primary sees it.
type ReplicaLink struct {
	IP     string
	State  string
	Offset int64
	// Lag is seconds since the replica last acknowledged (the primary's view).
	Lag int64
}

// ClusterStats are a cluster-mode node's CLUSTER INFO figures.
type ClusterStats struct {
	StateOK                                       bool
	SlotsAssigned, SlotsOK, SlotsPFail, SlotsFail int64
	KnownNodes                                    int64
}

// statsFrom reads Stats from a parsed INFO (sections clients, memory, stats, replication,
// persistence and keyspace) and, in cluster mode, a parsed CLUSTER INFO (nil otherwise).
func statsFrom(info, clusterInfo map[string]string) Stats {
	s := Stats{
		ConnectedClients:    infoInt(info, "connected_clients"),
		BlockedClients:      infoInt(info, "blocked_clients"),
		RejectedConnections: infoInt(info, "rejected_connections"),
		UsedMemory:          infoInt(info, "used_memory"),
		MaxMemory:           infoInt(info, "maxmemory"),
		EvictedKeys:         infoInt(info, "evicted_keys"),
		ExpiredKeys:         infoInt(info, "expired_keys"),
		CommandsProcessed:   infoInt(info, "total_commands_processed"),
		ReplicationOffset:   infoInt(info, "master_repl_offset"),
		PrimaryLinkUp:       info["master_link_status"] == "up",
		PrimaryLastIO:       -1,
		RDBLastSaveOK:       info["rdb_last_bgsave_status"] == "ok",
		AOFLastRewriteOK:    info["aof_last_bgrewrite_status"] == "ok",
		AOFLastWriteOK:      info["aof_last_write_status"] == "ok",
		AOFEnabled:          info["aof_enabled"] == "1",
		RDBLastSave:         infoInt(info, "rdb_last_save_time"),
	}
	s.OpsPerSecond, _ = strconv.ParseFloat(info["instantaneous_ops_per_sec"], 64)
	if v, ok := info["master_last_io_seconds_ago"]; ok {
		s.PrimaryLastIO, _ = strconv.ParseInt(v, 10, 64)
	}
	for k, v := range info {
		if numbered(k, "db") {
			f := fields(v)
			keys, _ := strconv.ParseInt(f["keys"], 10, 64)
			exp, _ := strconv.ParseInt(f["expires"], 10, 64)
			s.DBs = append(s.DBs, DBKeys{DB: k, Keys: keys, Expiring: exp})
		}
		if numbered(k, "slave") {
			f := fields(v)
			off, _ := strconv.ParseInt(f["offset"], 10, 64)
			lag, _ := strconv.ParseInt(f["lag"], 10, 64)
			s.Replicas = append(s.Replicas, ReplicaLink{IP: f["ip"], State: f["state"], Offset: off, Lag: lag})
		}
	}
	sort.Slice(s.DBs, func(i, j int) bool { return s.DBs[i].DB < s.DBs[j].DB })
	sort.Slice(s.Replicas, func(i, j int) bool { return s.Replicas[i].IP < s.Replicas[j].IP })
	if clusterInfo != nil {
		s.Cluster = &ClusterStats{
			StateOK:       clusterInfo["cluster_state"] == "ok",
			SlotsAssigned: infoInt(clusterInfo, "cluster_slots_assigned"),
			SlotsOK:       infoInt(clusterInfo, "cluster_slots_ok"),
			SlotsPFail:    infoInt(clusterInfo, "cluster_slots_pfail"),
			SlotsFail:     infoInt(clusterInfo, "cluster_slots_fail"),
			KnownNodes:    infoInt(clusterInfo, "cluster_known_nodes"),
		}
	}
	return s
}

// fields splits "a=1,b=2" (an INFO keyspace or slaveN value).
func fields(v string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Split(v, ",") {
		if k, val, ok := strings.Cut(f, "="); ok {
			m[k] = val
		}
	}
	return m
}
