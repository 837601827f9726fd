package shared

import (
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// series gathers reg and returns every sample as "name{label=value,...}" → value, in the
// labels' order of the metric's description.
func series(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName() + "{"
			for i, l := range m.GetLabel() {
				if i > 0 {
					key += ","
				}
				key += l.GetName() + "=" + l.GetValue()
			}
			key += "}"
			out[key] = value(mf.GetType(), m)
		}
	}
	return out
}

func value(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// The data-plane metrics say what the last survey read, per pod: a replica's lag in bytes is
// its primary's offset minus its own and in seconds what the primary saw; a node that did not
// answer is valkey_up 0 and nothing else; a pod that is gone is gone from the next scrape, and
// a forgotten cluster leaves nothing. A replication node costs at most 25 series, with one
// database.
func TestDataPlaneMetricsFollowTheLastSurvey(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := &NodeMetrics{}
	reg.MustRegister(m)
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	nodes := []machine.Node{
		{Name: "c-0", Reachable: true, Pod: machine.Pod{Exists: true, IP: "10.0.0.1"}, Valkey: machine.Valkey{Role: machine.RolePrimary, Version: "9.1.2"}},
		{Name: "c-1", Reachable: true, Pod: machine.Pod{Exists: true, IP: "10.0.0.2"}, Valkey: machine.Valkey{Role: machine.RoleReplica, PrimaryHost: "10.0.0.1", Version: "9.1.2"}},
		{Name: "c-2", Pod: machine.Pod{Exists: true, IP: "10.0.0.3"}},
	}
	stats := map[string]valkey.Stats{
		"c-0": {UsedMemory: 100, ReplicationOffset: 1000, RDBLastSaveOK: true, DBs: []valkey.DBKeys{{DB: "db0", Keys: 7, Expiring: 2}},
			Replicas: []valkey.ReplicaLink{{IP: "10.0.0.2", State: "online", Offset: 990, Lag: 1}}, CommandsProcessed: 50},
		"c-1": {ReplicationOffset: 960, PrimaryLinkUp: true, PrimaryLastIO: 0, DBs: []valkey.DBKeys{{DB: "db0", Keys: 7, Expiring: 2}}},
	}
	m.Record(key, nodes, stats)
	got := series(t, reg)
	// l is the labels of pod's series with extra ones ("k=v"), sorted as Gather sorts them.
	l := func(pod string, extra ...string) string {
		labels := append([]string{"cluster=c", "namespace=ns", "pod=" + pod, "shard=0"}, extra...)
		sort.Strings(labels)
		return strings.Join(labels, ",")
	}
	for k, want := range map[string]float64{
		"valkey_up{" + l("c-0") + "}": 1,
		"valkey_up{" + l("c-2") + "}": 0,
		"valkey_instance_info{" + l("c-0", "role=primary", "version=9.1.2") + "}": 1,
		"valkey_instance_info{" + l("c-1", "role=replica", "version=9.1.2") + "}": 1,
		"valkey_replica_lag_bytes{" + l("c-1") + "}":                              40,
		"valkey_replica_lag_seconds{" + l("c-1") + "}":                            1,
		"valkey_master_link_up{" + l("c-1") + "}":                                 1,
		"valkey_connected_replicas{" + l("c-0") + "}":                             1,
		"valkey_db_keys{" + l("c-0", "db=db0") + "}":                              7,
		"valkey_db_keys_expiring{" + l("c-0", "db=db0") + "}":                     2,
		"valkey_memory_used_bytes{" + l("c-0") + "}":                              100,
		"valkey_commands_processed_total{" + l("c-0") + "}":                       50,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	perPod := map[string]int{}
	for k := range got {
		for _, pod := range []string{"c-0", "c-1", "c-2"} {
			if strings.Contains(k, "pod="+pod+",") {
				perPod[pod]++
			}
		}
	}
	if perPod["c-2"] != 1 || perPod["c-0"] > 25 || perPod["c-1"] > 25 {
		t.Errorf("series per pod %v: want 1 for a node that did not answer, at most 25 for the others", perPod)
	}
	if _, ok := got["valkey_cluster_state{"+l("c-0")+"}"]; ok {
		t.Error("cluster metrics for a replication group")
	}

	m.Record(key, nodes[:1], map[string]valkey.Stats{"c-0": stats["c-0"]})
	for k := range series(t, reg) {
		if strings.Contains(k, "pod=c-1,") || strings.Contains(k, "pod=c-2,") {
			t.Fatalf("a pod that is gone is still exported: %s", k)
		}
	}
	m.Forget(key)
	if left := series(t, reg); len(left) != 0 {
		t.Errorf("a forgotten cluster leaves %v", left)
	}
}
