package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/golden"
)

// now is the clock the commands run with: ages in the golden files are relative to it.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

func at(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }

// lifeOf is the history of a three-pod cluster that bootstrapped, failed over and rolled
// out an image: entry i has seq i+1.
var lifeOf = []v1beta1.HistoryEntry{
	{Seq: 1, Time: at(-72 * time.Hour), From: "Bootstrapping", To: "Steady", Event: "bootstrap-complete", Reason: "BootstrapComplete", Message: "3/3 nodes ready, primary cache-0"},
	{Seq: 2, Time: at(-30 * time.Hour), From: "Steady", To: "FailingOver", Event: "primary-lost", Reason: "PrimaryLost", Message: "cache-0 unreachable for 3 probes"},
	{Seq: 3, Time: at(-30*time.Hour + 6*time.Second), From: "FailingOver", To: "Steady", Event: "failover-complete", Reason: "FailoverComplete", Message: "cache-1 is primary, 2 replicas follow"},
	{Seq: 4, Time: at(-2 * time.Hour), From: "Steady", To: "Rolling", Event: "rollout-needed", Reason: "RolloutNeeded", Message: "image valkey/valkey:8.0 -> valkey/valkey:8.1"},
	{Seq: 5, Time: at(-2*time.Hour + 40*time.Second), From: "Rolling", To: "Rolling", Event: "primary-handed-over", Reason: "PrimaryHandedOver", Message: "cache-1 -> cache-2"},
	{Seq: 6, Time: at(-2*time.Hour + 90*time.Second), From: "Rolling", To: "Steady", Event: "rollout-complete", Reason: "RolloutComplete", Message: "3/3 pods on revision 7d9f"},
	{Seq: 7, Time: at(-10 * time.Minute), From: "Steady", To: "FailingOver", Event: "switchover-requested", Reason: "SwitchoverRequested", Message: "switchover to cache-0 requested"},
	{Seq: 8, Time: at(-9 * time.Minute), From: "FailingOver", To: "Steady", Event: "failover-complete", Reason: "FailoverComplete", Message: "cache-0 is primary, 2 replicas follow"},
}

// statusAfter is the status the operator writes after the transitions of history, the last
// one current.
func statusAfter(history []v1beta1.HistoryEntry) v1beta1.ValkeyClusterStatus {
	last := history[len(history)-1]
	st := v1beta1.ValkeyClusterStatus{
		State: last.To, ObservedGeneration: 1, History: history,
		Conditions: []metav1.Condition{{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: "PrimaryServing", Message: "cache-0 accepts writes", LastTransitionTime: at(-9 * time.Minute)}},
		Nodes: []v1beta1.NodeStatus{
			{Pod: "cache-0", IP: "10.244.1.7", Role: v1beta1.NodeRolePrimary, ReplicationOffset: 9812003, Ready: true},
			{Pod: "cache-1", IP: "10.244.2.4", Role: v1beta1.NodeRoleReplica, ReplicationOffset: 9811459, Lag: 544, Ready: true},
			{Pod: "cache-2", IP: "10.244.3.9", Role: v1beta1.NodeRoleReplica, ReplicationOffset: 9812003, Ready: true},
		},
		Primary: "cache-0", ReadyNodes: "3/3", Pods: 3, ReadyPods: 3, Replicas: 2,
	}
	for _, typ := range v1beta1.StateConditionTypes() {
		c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: last.Reason, Message: "the cluster is " + string(last.To), LastTransitionTime: last.Time}
		if typ == string(last.To) {
			c.Status, c.Message = metav1.ConditionTrue, last.Message
		}
		st.Conditions = append(st.Conditions, c)
	}
	return st
}

// status and history read what the operator wrote, from a real API server, with the
// connection flags of a kubeconfig.
func TestStatusAndHistoryAgainstAPIServer(t *testing.T) {
	ns := namespace(t, "status-and-history")

	createCluster(t, ns, "fresh")
	out, err := kubectlValkey(t, "status", "fresh", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	// The API server's defaults, before any status.
	golden.Assert(t, "status-fresh.txt", []byte(out))
	out, err = kubectlValkey(t, "history", "fresh", "-n", ns)
	if err != nil || out != "No transitions recorded for status-and-history/fresh yet.\n" {
		t.Errorf("history of a fresh cluster: %v\n%s", err, out)
	}

	createCluster(t, ns, "cache")
	writeStatus(t, ns, "cache", statusAfter(lifeOf))

	out, err = kubectlValkey(t, "status", "cache", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "status.txt", []byte(out))
	for _, want := range []string{"State:        Steady for 9m (FailoverComplete)", "Primary:      cache-0", "cache-1   Replica   10.244.2.4   9811459   544   true", "(3 earlier: kubectl valkey history cache -n status-and-history)"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q", want)
		}
	}

	out, err = kubectlValkey(t, "status", "cache", "-n", ns, "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	var st v1beta1.ValkeyClusterStatus
	if err := yaml.UnmarshalStrict([]byte(out), &st); err != nil {
		t.Fatalf("status -o yaml is not a ValkeyClusterStatus: %v\n%s", err, out)
	}
	if st.State != v1beta1.StateSteady || len(st.History) != len(lifeOf) || len(st.Nodes) != 3 || len(st.Conditions) != 8 {
		t.Errorf("status -o yaml: %+v", st)
	}

	out, err = kubectlValkey(t, "history", "cache", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "history.txt", []byte(out))
	if n := strings.Count(out, "\n"); n != 1+len(lifeOf) {
		t.Errorf("history has %d lines, want a header and %d rows", n, len(lifeOf))
	}

	out, err = kubectlValkey(t, "history", "cache", "-n", ns, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var entries []v1beta1.HistoryEntry
	if err := json.Unmarshal([]byte(out), &entries); err != nil || len(entries) != len(lifeOf) || entries[7].Message != lifeOf[7].Message {
		t.Errorf("history -o json: %v\n%s", err, out)
	}

	_, err = kubectlValkey(t, "status", "nope", "-n", ns)
	if err == nil || err.Error() != "ValkeyCluster status-and-history/nope not found" {
		t.Errorf("status of a missing cluster: %v", err)
	}
	_, err = kubectlValkey(t, "history", "cache", "-n", ns, "-o", "wide")
	if err == nil || !strings.Contains(err.Error(), `unknown output format "wide"`) {
		t.Errorf("-o wide: %v", err)
	}
}

// --watch prints the current history, then each transition the operator appends (also when
// the bounded history drops old entries at the same time), and ends without error when its
// context is cancelled (Ctrl-C).
func TestHistoryWatch(t *testing.T) {
	ns := namespace(t, "history-watch")
	createCluster(t, ns, "cache")
	writeStatus(t, ns, "cache", statusAfter(lifeOf[:2]))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- runCommand(ctx, &stdout, &stderr, "history", "cache", "-n", ns, "--watch") }()

	hasRow := func(seq int) func() bool {
		return func() bool { return strings.Contains(stdout.String(), "\n"+strconv.Itoa(seq)+" ") }
	}
	eventually(t, "the current history is printed", hasRow(2))

	writeStatus(t, ns, "cache", statusAfter(lifeOf[:3]))
	eventually(t, "transition 3 is printed", hasRow(3))

	// Another status change without a transition prints nothing.
	st := statusAfter(lifeOf[:3])
	st.Nodes[1].Lag = 0
	writeStatus(t, ns, "cache", st)

	// A history bounded to 3 entries: 1-3 dropped, 4-6 appended.
	writeStatus(t, ns, "cache", statusAfter(lifeOf[3:6]))
	eventually(t, "transitions 4 to 6 are printed", hasRow(6))

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("--watch ended with %v after its context was cancelled, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("--watch did not end after its context was cancelled")
	}
	golden.Assert(t, "history-watch.txt", []byte(stdout.String()))
	for seq := 1; seq <= 6; seq++ {
		if n := strings.Count(stdout.String(), "\n"+strconv.Itoa(seq)+" "); n != 1 {
			t.Errorf("transition %d printed %d times", seq, n)
		}
	}
	if s := stderr.String(); s != "" {
		t.Errorf("stderr: %s", s)
	}
}

// journalDocument is what the operator serves for status-and-history/cache: its journal
// started when status.history held 3 and 4 only, then it journaled 5 and 6 itself.
const journalDocument = `{"cluster":"history-full/cache/1c1d9e2a","records":[
{"kind":"gap","gapFrom":1,"gapTo":2,"recorded":"2026-03-01T09:58:00Z"},
{"kind":"backfilled","entry":{"Seq":3,"Time":"2026-02-28T06:00:06Z","Event":"failover-complete","From":"FailingOver","To":"Steady","Message":"cache-1 is primary, 2 replicas follow"},"recorded":"2026-03-01T09:58:00Z"},
{"kind":"backfilled","entry":{"Seq":4,"Time":"2026-03-01T10:00:00Z","Event":"rollout-needed","From":"Steady","To":"Rolling","Message":"image valkey/valkey:8.0 -> valkey/valkey:8.1"},"recorded":"2026-03-01T10:00:01Z"},
{"kind":"transition","entry":{"Seq":5,"Time":"2026-03-01T10:00:40Z","Event":"primary-handed-over","From":"Rolling","To":"Rolling","Message":"cache-1 -> cache-2"},"recorded":"2026-03-01T10:00:40Z"},
{"kind":"transition","entry":{"Seq":6,"Time":"2026-03-01T10:01:30Z","Event":"rollout-complete","From":"Rolling","To":"Steady","Message":"3/3 pods on revision 7d9f"},"recorded":"2026-03-01T10:01:30Z"}]}`

// journalAPI registers, in the package's API server, the operator's aggregated journal API
// (the APIService the chart installs) served by a stand-in on 127.0.0.1 that answers
// discovery and the journal of history-full/cache. The stand-in is the operator's part only:
// the API server that authenticates, authorises and proxies is real. (The real operator's
// endpoint is tested through the real API server in e2e/operatorsuite.)
func journalAPI(t *testing.T) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/journal.valkey.fsm.dev/v1alpha1":
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"journal.valkey.fsm.dev/v1alpha1","resources":[{"name":"journals","singularName":"journal","namespaced":true,"kind":"JournalPage","verbs":["get"]}]}`))
		case "/apis/journal.valkey.fsm.dev/v1alpha1/namespaces/history-full/journals/cache":
			_, _ = w.Write([]byte(strings.Replace(journalDocument, "{", `{"metadata":{"name":"cache","namespace":"history-full"},`, 1)))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no journal for this cluster","reason":"NotFound","code":404}`))
		}
	}))
	t.Cleanup(srv.Close)
	port, err := strconv.Atoi(srv.URL[strings.LastIndex(srv.URL, ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := namespace(t, "journal-api")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "journal"},
		// The API server refuses loopback Endpoints; an ExternalName Service names the address.
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "127.0.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: int32(port)}}},
	}
	if _, err := shared.core.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	apiService := map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1alpha1.journal.valkey.fsm.dev"},
		"spec": map[string]any{
			"group": "journal.valkey.fsm.dev", "version": "v1alpha1", "groupPriorityMinimum": 1000, "versionPriority": 15,
			"service": map[string]any{"namespace": ns, "name": "journal", "port": port},
			// httptest's certificate does not name the Service; what is tested here is the
			// plugin's path through the API server, not the serving certificate.
			"insecureSkipTLSVerify": true,
		},
	}
	res := shared.dyn.Resource(apiServicesResource)
	if _, err := res.Create(ctx, &unstructured.Unstructured{Object: apiService}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = res.Delete(context.Background(), "v1alpha1.journal.valkey.fsm.dev", metav1.DeleteOptions{})
	})
	// Served once the aggregator finds it available.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := shared.core.Discovery().RESTClient().Get().AbsPath("/apis/journal.valkey.fsm.dev/v1alpha1").DoRaw(ctx)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the journal APIService is not served: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var apiServicesResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// --full reads the operator's journal through the API server, and says what is missing when
// it cannot.
func TestHistoryFull(t *testing.T) {
	ns := namespace(t, "history-full")
	_, err := kubectlValkey(t, "history", "cache", "-n", ns, "--full")
	if err == nil || !strings.Contains(err.Error(), "The journal API is not installed") {
		t.Errorf("without the journal API: %v", err)
	}
	journalAPI(t)
	out, err := kubectlValkey(t, "history", "cache", "-n", ns, "--full")
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "history-full.txt", []byte(out))
	for _, want := range []string{"\n      ... 2 transitions not journaled (seq 1-2) ...\n", "\n3*  ", "\n4*  ", "\n5   ", "\n* backfilled"} {
		if !strings.Contains(out, want) {
			t.Errorf("--full output lacks %q", want)
		}
	}
	_, err = kubectlValkey(t, "history", "other", "-n", ns, "--full")
	if err == nil || !strings.Contains(err.Error(), "history-full/other") {
		t.Errorf("a cluster without a journal: %v", err)
	}
	_, err = kubectlValkey(t, "history", "cache", "-n", ns, "--full", "--watch")
	if err == nil || !strings.Contains(err.Error(), "cannot be combined") {
		t.Errorf("--full --watch: %v", err)
	}
}

// TestBackupVerb: backup creates a ValkeyBackup of the cluster (named by --name, or by the
// cluster and the time), refuses a cluster without spec.backup with what to set, and --wait
// follows the backup until the operator (here the test, writing status) completes or fails it.
func TestBackupVerb(t *testing.T) {
	ns := namespace(t, "backup-verb")
	createClusterWith(t, ns, "orders", v1beta1.ValkeyClusterSpec{Backup: &v1beta1.BackupSpec{Store: v1beta1.BackupStore{Bucket: "backups", CredentialsSecretRef: &v1beta1.SecretRef{Name: "s3"}}}})
	createCluster(t, ns, "plain")
	backups := shared.dyn.Resource(v1beta1.SchemeGroupVersion.WithResource("valkeybackups")).Namespace(ns)

	out, err := kubectlValkey(t, "backup", "orders", "-n", ns)
	if err != nil || !strings.Contains(out, "backup orders-20260301-120000 of orders requested") {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	u, err := backups.Get(context.Background(), "orders-20260301-120000", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _ := unstructured.NestedString(u.Object, "spec", "cluster"); c != "orders" {
		t.Errorf("the ValkeyBackup names cluster %q", c)
	}

	if _, err := kubectlValkey(t, "backup", "plain", "-n", ns); err == nil || !strings.Contains(err.Error(), "has no spec.backup: set spec.backup.store") {
		t.Errorf("a cluster without spec.backup: %v", err)
	}
	if _, err := kubectlValkey(t, "backup", "nope", "-n", ns); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a missing cluster: %v", err)
	}

	// --wait, with the test as the operator.
	for _, c := range []struct {
		name   string
		status map[string]any
		want   string
		fails  bool
	}{
		{"done", map[string]any{"phase": "Completed", "attempts": int64(1), "size": int64(4096), "location": "s3://backups/backup-verb/orders/done/",
			"shards": []any{map[string]any{"index": int64(0), "node": "orders-1", "file": "shard-0.rdb", "size": int64(4096), "sha256": "ab"}}},
			"completed: 1 shard(s), 4096 bytes, in s3://backups/backup-verb/orders/done/", false},
		{"broken", map[string]any{"phase": "Failed", "attempts": int64(3), "reason": "shard 0 (orders-1): AccessDenied"}, "failed after 3 attempt(s): shard 0 (orders-1): AccessDenied", true},
	} {
		// Written from a goroutine: the verb is waiting meanwhile (a failure to write shows as
		// the verb's timeout).
		go func() {
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				u, err := backups.Get(context.Background(), c.name, metav1.GetOptions{})
				if err != nil {
					continue
				}
				u.Object["status"] = c.status
				if _, err = backups.UpdateStatus(context.Background(), u, metav1.UpdateOptions{}); err == nil {
					return
				}
			}
		}()
		out, err := kubectlValkey(t, "backup", "orders", "-n", ns, "--name", c.name, "--wait", "--timeout", "30s")
		got := out
		if err != nil {
			got += err.Error()
		}
		if (err != nil) != c.fails || !strings.Contains(got, c.want) {
			t.Errorf("backup --wait of %s: %v\n%s\nwant %q", c.name, err, out, c.want)
		}
	}
}
