package valkey

import (
	"context"
	"testing"
)

// The figures exported as metrics are read from a real node's INFO in the survey itself: a
// primary with keys in two databases (some with a TTL) and a replica following it report
// their keys per database, memory, commands, the replica as the primary sees it, and the link
// as the replica sees it.
func TestASurveyReadsTheNodesStats(t *testing.T) {
	ctx := context.Background()
	l := startLinkedPair(t, "127.78.0.18", "127.78.0.19")
	p, prim, repl := l.p, l.prim, l.repl
	c := appClient(t, prim)
	for _, r := range c.DoMulti(ctx, c.B().Set().Key("a").Value("1").Build(), c.B().Set().Key("b").Value("2").ExSeconds(3600).Build()) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Do(ctx, c.B().Set().Key("a").Value("again").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the replica counted by its primary, caught up", func() bool {
		_, ps, err := p.SurveyWithStats(ctx, prim.ip)
		_, rs, err2 := p.SurveyWithStats(ctx, repl.ip)
		return err == nil && err2 == nil && len(ps.Replicas) == 1 && ps.Replicas[0].State == "online" && rs.PrimaryLinkUp &&
			rs.ReplicationOffset == ps.ReplicationOffset && ps.Replicas[0].Offset == ps.ReplicationOffset
	})
	_, ps, err := p.SurveyWithStats(ctx, prim.ip)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.DBs) != 1 || ps.DBs[0] != (DBKeys{DB: "db0", Keys: 2, Expiring: 1}) {
		t.Errorf("databases %+v, want db0 with 2 keys, 1 expiring", ps.DBs)
	}
	if ps.UsedMemory <= 0 || ps.CommandsProcessed <= 0 || ps.ConnectedClients < 1 || ps.ReplicationOffset <= 0 || !ps.RDBLastSaveOK || ps.Cluster != nil {
		t.Errorf("primary stats %+v", ps)
	}
	if ps.Replicas[0].IP != repl.ip || ps.Replicas[0].Offset <= 0 {
		t.Errorf("the primary sees its replica as %+v", ps.Replicas[0])
	}
	_, rs, err := p.SurveyWithStats(ctx, repl.ip)
	if err != nil {
		t.Fatal(err)
	}
	if !rs.PrimaryLinkUp || rs.PrimaryLastIO < 0 || len(rs.Replicas) != 0 || len(rs.DBs) != 1 {
		t.Errorf("replica stats %+v", rs)
	}
}

// statsFrom reads what Valkey writes, including a cluster node's CLUSTER INFO and databases
// other than 0.
func TestStatsAreParsedFromInfo(t *testing.T) {
	info := parseInfo("# Clients\r\nconnected_clients:7\r\nblocked_clients:1\r\n# Memory\r\nused_memory:1048576\r\nmaxmemory:2097152\r\n" +
		"# Stats\r\ntotal_commands_processed:99\r\ninstantaneous_ops_per_sec:12.5\r\nrejected_connections:2\r\nexpired_keys:3\r\nevicted_keys:4\r\n" +
		"# Replication\r\nrole:master\r\nconnected_slaves:2\r\nslave0:ip=10.0.0.2,port=6379,state=online,offset=500,lag=0\r\nslave1:ip=10.0.0.1,port=6379,state=wait_bgsave,offset=0,lag=3\r\nmaster_repl_offset:600\r\n" +
		"# Persistence\r\nrdb_last_bgsave_status:err\r\naof_enabled:1\r\naof_last_bgrewrite_status:ok\r\naof_last_write_status:ok\r\nrdb_last_save_time:1700000000\r\n" +
		"# Keyspace\r\ndb0:keys=10,expires=2,avg_ttl=0\r\ndb5:keys=1,expires=0,avg_ttl=0\r\n")
	s := statsFrom(info, parseInfo("cluster_state:fail\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16000\r\ncluster_slots_pfail:300\r\ncluster_slots_fail:84\r\ncluster_known_nodes:6\r\n"))
	if s.ConnectedClients != 7 || s.BlockedClients != 1 || s.UsedMemory != 1<<20 || s.MaxMemory != 2<<20 || s.CommandsProcessed != 99 || s.OpsPerSecond != 12.5 ||
		s.RejectedConnections != 2 || s.ExpiredKeys != 3 || s.EvictedKeys != 4 || s.ReplicationOffset != 600 || s.RDBLastSaveOK || !s.AOFEnabled || !s.AOFLastWriteOK || s.RDBLastSave != 1700000000 {
		t.Errorf("stats %+v", s)
	}
	if len(s.Replicas) != 2 || s.Replicas[0] != (ReplicaLink{IP: "10.0.0.1", State: "wait_bgsave", Offset: 0, Lag: 3}) || s.Replicas[1].Offset != 500 {
		t.Errorf("replicas %+v", s.Replicas)
	}
	if len(s.DBs) != 2 || s.DBs[1] != (DBKeys{DB: "db5", Keys: 1}) {
		t.Errorf("databases %+v", s.DBs)
	}
	if c := s.Cluster; c == nil || c.StateOK || c.SlotsAssigned != 16384 || c.SlotsOK != 16000 || c.SlotsPFail != 300 || c.SlotsFail != 84 || c.KnownNodes != 6 {
		t.Errorf("cluster %+v", s.Cluster)
	}
}
