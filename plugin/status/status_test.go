package status

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/golden"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// now is the clock of every test: ages in the golden files are relative to it.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func stateConditions(state v1beta1.State, reason string, since metav1.Time) []metav1.Condition {
	conds := []metav1.Condition{}
	for _, typ := range v1beta1.StateConditionTypes() {
		c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: "NotCurrent", LastTransitionTime: since, Message: "the cluster is " + string(state)}
		if typ == string(state) {
			c = metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, LastTransitionTime: since, Message: "since this transition"}
		}
		conds = append(conds, c)
	}
	return conds
}

// steadyAfterFailover is a three-pod cluster that failed over once and rolled out a new
// image: seven transitions, more than status shows.
func steadyAfterFailover() *v1beta1.ValkeyCluster {
	vc := &v1beta1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "prod", Generation: 3},
		Spec:       v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologyReplication, Profile: v1beta1.ProfileDurable, Image: "valkey/valkey:8.1", Replicas: ptr.To(int32(2))},
	}
	h := []v1beta1.HistoryEntry{
		{Seq: 1, Time: ago(72 * time.Hour), From: "Bootstrapping", To: "Steady", Event: "bootstrap-complete", Reason: "BootstrapComplete", Message: "3/3 nodes ready, primary cache-0"},
		{Seq: 2, Time: ago(30 * time.Hour), From: "Steady", To: "FailingOver", Event: "primary-lost", Reason: "PrimaryLost", Message: "cache-0 unreachable for 3 probes"},
		{Seq: 3, Time: ago(30*time.Hour - 4*time.Second), From: "FailingOver", To: "FailingOver", Event: "candidate-elected", Reason: "CandidateElected", Message: "cache-1 has the highest offset (120394)"},
		{Seq: 4, Time: ago(30*time.Hour - 6*time.Second), From: "FailingOver", To: "Steady", Event: "failover-complete", Reason: "FailoverComplete", Message: "cache-1 is primary, 2 replicas follow"},
		{Seq: 5, Time: ago(2 * time.Hour), From: "Steady", To: "Rolling", Event: "rollout-needed", Reason: "RolloutNeeded", Message: "image valkey/valkey:8.0 -> valkey/valkey:8.1"},
		{Seq: 6, Time: ago(2*time.Hour - 40*time.Second), From: "Rolling", To: "Rolling", Event: "primary-handed-over", Reason: "PrimaryHandedOver", Message: "switchover cache-1 -> cache-2\nbefore replacing cache-1"},
		{Seq: 7, Time: ago(2*time.Hour - 90*time.Second), From: "Rolling", To: "Steady", Event: "rollout-complete", Reason: "RolloutComplete", Message: "3/3 pods on revision 7d9f"},
	}
	conds := append([]metav1.Condition{{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: "PrimaryServing", LastTransitionTime: ago(2*time.Hour - 40*time.Second), Message: "cache-2 accepts writes"}},
		stateConditions(v1beta1.StateSteady, "RolloutComplete", h[6].Time)...)
	vc.Status = v1beta1.ValkeyClusterStatus{
		State: v1beta1.StateSteady, ObservedGeneration: 3, Conditions: conds, History: h,
		Nodes: []v1beta1.NodeStatus{
			{Pod: "cache-0", IP: "10.244.1.7", Role: v1beta1.NodeRoleReplica, ReplicationOffset: 9812003, Lag: 0, Ready: true},
			{Pod: "cache-1", IP: "10.244.2.4", Role: v1beta1.NodeRoleReplica, ReplicationOffset: 9811459, Lag: 544, Ready: true},
			{Pod: "cache-2", IP: "10.244.3.9", Role: v1beta1.NodeRolePrimary, ReplicationOffset: 9812003, Ready: true},
		},
		Primary: "cache-2", ReadyNodes: "3/3", Pods: 3, ReadyPods: 3, Replicas: 2, ValkeyVersion: "8.1.4",
	}
	return vc
}

func unstructuredOf(t *testing.T, vc *v1beta1.ValkeyCluster) *unstructured.Unstructured {
	t.Helper()
	u, err := kube.Unstructured(vc)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func print(t *testing.T, u *unstructured.Unstructured, f output.Format) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := Print(&out, u, f, clock); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestTextSteadyCluster(t *testing.T) {
	got := print(t, unstructuredOf(t, steadyAfterFailover()), output.Text)
	golden.Assert(t, "steady.txt", got)
	// The golden file is read by people; these are the facts it must keep whatever its layout.
	for _, want := range []string{"Steady for 118m (RolloutComplete)", "3/3 (Ready=True)", "Version:      8.1.4", "cache-1   Replica   10.244.2.4   9811459   544", "(2 earlier: kubectl valkey history cache -n prod)"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(string(got), "bootstrap-complete") {
		t.Error("output shows transition 1, older than the last 5")
	}
	if strings.Contains(string(got), "Warnings") {
		t.Error("a consistent status has warnings")
	}
}

// Actions that keep failing are listed, with their count, the next try and the error.
func TestTextFailingActions(t *testing.T) {
	vc := steadyAfterFailover()
	vc.Status.FailingActions = []v1beta1.FailingAction{{
		Action: "replica-of cache-0 -> cache-2 (10.244.3.9)", Count: 3, LastError: "dial tcp 10.244.1.7:6379: i/o timeout",
		RetryAt: metav1.NewTime(now.Add(8 * time.Second)),
	}}
	got := string(print(t, unstructuredOf(t, vc), output.Text))
	for _, want := range []string{"Failing actions:", "replica-of cache-0 -> cache-2 (10.244.3.9)   3", "in 8s", "i/o timeout"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(string(print(t, unstructuredOf(t, steadyAfterFailover()), output.Text)), "Failing actions") {
		t.Error("a cluster without failing actions shows the section")
	}
}

// A restore's phase, what it restores and why it waits or was refused.
func TestTextRestore(t *testing.T) {
	vc := steadyAfterFailover()
	vc.Status.Restore = &v1beta1.RestoreStatus{ID: "s3://backups/prod/cache/nightly/", Phase: "Refused", Reason: "refused: shard 0: sha256 differs"}
	got := string(print(t, unstructuredOf(t, vc), output.Text))
	if want := "Restore:      Refused s3://backups/prod/cache/nightly/: refused: shard 0: sha256 differs"; !strings.Contains(got, want) {
		t.Errorf("output lacks %q:\n%s", want, got)
	}
	if strings.Contains(string(print(t, unstructuredOf(t, steadyAfterFailover()), output.Text)), "Restore:") {
		t.Error("a cluster without a restore shows one")
	}
}

// A cluster the operator has not reconciled yet has no status at all.
func TestTextNewCluster(t *testing.T) {
	vc := &v1beta1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: "default", Generation: 1},
		Spec:       v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologyStandalone, Profile: v1beta1.ProfileCache, Image: "valkey/valkey:8.0"},
	}
	golden.Assert(t, "new.txt", print(t, unstructuredOf(t, vc), output.Text))
}

func TestWarnings(t *testing.T) {
	vc := steadyAfterFailover()
	if w := Warnings(vc); len(w) != 0 {
		t.Fatalf("consistent status: warnings %q", w)
	}
	vc.Generation = 4
	vc.Status.Nodes[0].Role = v1beta1.NodeRolePrimary // a second primary
	vc.Status.Primary = "cache-1"                     // recognised, but reports replica
	vc.Status.Conditions[1].Status = metav1.ConditionTrue
	got := print(t, unstructuredOf(t, vc), output.Text)
	golden.Assert(t, "warnings.txt", got)
	w := Warnings(vc)
	if len(w) != 3 {
		t.Fatalf("got %d warnings, want 3: %q", len(w), w)
	}
	for i, want := range []string{"state conditions: condition Bootstrapping is True", "2 nodes report role primary: cache-0, cache-2", "the recognised primary cache-1 reports role Replica"} {
		if !strings.Contains(w[i], want) {
			t.Errorf("warning %d is %q, want it to contain %q", i, w[i], want)
		}
	}
	if !strings.Contains(string(got), "4 (the operator has acted on 3)") {
		t.Error("a spec change the operator has not acted on is not shown")
	}
}

// -o json and -o yaml print status, all of it: a field this plugin does not know survives.
func TestJSONAndYAMLPrintWholeStatus(t *testing.T) {
	u := unstructuredOf(t, steadyAfterFailover())
	if err := unstructured.SetNestedField(u.Object, "from a newer operator", "status", "futureField"); err != nil {
		t.Fatal(err)
	}
	gotJSON := print(t, u, output.JSON)
	golden.Assert(t, "status.json", gotJSON)
	gotYAML := print(t, u, output.YAML)
	golden.Assert(t, "status.yaml", gotYAML)

	for name, data := range map[string][]byte{"json": gotJSON, "yaml": gotYAML} {
		var decoded map[string]any
		if err := yaml.Unmarshal(data, &decoded); err != nil { // YAML is a superset of JSON
			t.Fatalf("%s: %v", name, err)
		}
		if decoded["futureField"] != "from a newer operator" {
			t.Errorf("%s lost a status field the plugin does not know", name)
		}
		if _, ok := decoded["spec"]; ok {
			t.Errorf("%s printed the object rather than its status", name)
		}
		want, _ := json.Marshal(u.Object["status"])
		got, _ := json.Marshal(decoded)
		if !bytes.Equal(want, got) {
			t.Errorf("%s is not the object's status:\n%s\nwant\n%s", name, got, want)
		}
	}
}

func TestJSONOfNewClusterIsEmptyObject(t *testing.T) {
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: "default"}}
	u := unstructuredOf(t, vc)
	delete(u.Object, "status")
	if got := string(print(t, u, output.JSON)); got != "{}\n" {
		t.Errorf("got %q, want {}", got)
	}
}

// TestClusterTopologyStatus: a Cluster topology has one primary per shard, which is no warning;
// two primaries in one shard are. The shards and their slots are shown instead of one primary.
func TestClusterTopologyStatus(t *testing.T) {
	vc := &v1beta1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default", Generation: 1},
		Spec:       v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologyCluster, Shards: 2, Replicas: ptr.To(int32(1)), Image: "valkey/valkey:9.1"},
		Status: v1beta1.ValkeyClusterStatus{
			State: v1beta1.StateSteady, ObservedGeneration: 1, ReadyNodes: "4/4", ShardCount: 2, Slots: "16384/16384",
			Conditions: stateConditions(v1beta1.StateSteady, "BootstrapComplete", ago(time.Hour)),
			Shards:     []v1beta1.ShardStatus{{Index: 0, Primary: "shop-s0-0", Slots: "0-8191"}, {Index: 1, Primary: "shop-s1-1", Slots: "8192-16383"}},
			Nodes: []v1beta1.NodeStatus{
				{Pod: "shop-s0-0", Role: v1beta1.NodeRolePrimary, Shard: 0, Ready: true},
				{Pod: "shop-s0-1", Role: v1beta1.NodeRoleReplica, Shard: 0, Ready: true},
				{Pod: "shop-s1-0", Role: v1beta1.NodeRoleReplica, Shard: 1, Ready: true},
				{Pod: "shop-s1-1", Role: v1beta1.NodeRolePrimary, Shard: 1, Ready: true},
			},
		},
	}
	if w := Warnings(vc); len(w) != 0 {
		t.Fatalf("one primary per shard: warnings %q", w)
	}
	got := string(print(t, unstructuredOf(t, vc), output.Text))
	for _, want := range []string{"Shards:       2 with a primary, slots served 16384/16384", "1       shop-s1-1   8192-16383"} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
	vc.Status.Nodes[2].Role = v1beta1.NodeRolePrimary
	if w := Warnings(vc); len(w) != 1 || !strings.Contains(w[0], "2 nodes of shard 1 report role primary: shop-s1-0, shop-s1-1") {
		t.Fatalf("two primaries in shard 1: warnings %q", w)
	}
}

// A Sentinel topology's status lists what each sentinel names as the primary: one that does not
// answer, one that names another primary under a newer epoch and flags a failover, are plain.
func TestSentinelsAreListed(t *testing.T) {
	vc := steadyAfterFailover()
	vc.Spec.Topology = v1beta1.TopologySentinel
	vc.Status.Sentinels = []v1beta1.SentinelStatus{
		{Pod: "cache-sentinel-0", IP: "10.244.1.20", Answering: true, Monitoring: true, Primary: "cache-2", ConfigEpoch: 3, OtherSentinels: 2},
		{Pod: "cache-sentinel-1", IP: "10.244.2.21", Answering: true, Monitoring: true, Primary: "cache-0", ConfigEpoch: 4, OtherSentinels: 2, FailingOver: true, PrimaryDown: true},
		{Pod: "cache-sentinel-2"},
		{Pod: "cache-sentinel-3", IP: "10.244.3.22", Error: "WRONGPASS"},
	}
	got := string(print(t, unstructuredOf(t, vc), output.Text))
	for _, want := range []string{"Sentinels:", "cache-sentinel-0   10.244.1.20   yes       cache-2", "primary-down,failing-over", "cache-sentinel-2   <none>        no", "WRONGPASS"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(string(print(t, unstructuredOf(t, steadyAfterFailover()), output.Text)), "Sentinels:") {
		t.Error("a Replication topology lists sentinels")
	}
}
