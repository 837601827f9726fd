package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/golden"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// now is the clock the commands run with: ages in the golden files are relative to it.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

func at(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }

// lifeOf is the history of a three-pod cluster that bootstrapped, failed over and rolled
// out an image: entry i has seq i+1.
var lifeOf = []v1alpha1.HistoryEntry{
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
func statusAfter(history []v1alpha1.HistoryEntry) v1alpha1.ValkeyClusterStatus {
	last := history[len(history)-1]
	st := v1alpha1.ValkeyClusterStatus{
		State: last.To, ObservedGeneration: 1, History: history,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "PrimaryServing", Message: "cache-0 accepts writes", LastTransitionTime: at(-9 * time.Minute)}},
		Nodes: []v1alpha1.NodeStatus{
			{Pod: "cache-0", IP: "10.244.1.7", Role: v1alpha1.NodeRolePrimary, ReplicationOffset: 9812003, Ready: true},
			{Pod: "cache-1", IP: "10.244.2.4", Role: v1alpha1.NodeRoleReplica, ReplicationOffset: 9811459, Lag: 544, Ready: true},
			{Pod: "cache-2", IP: "10.244.3.9", Role: v1alpha1.NodeRoleReplica, ReplicationOffset: 9812003, Ready: true},
		},
		Primary: "cache-0", ReadyNodes: "3/3", Replicas: 3, ReadyReplicas: 3,
	}
	for _, typ := range v1alpha1.StateConditionTypes() {
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
	for _, want := range []string{"State:        Steady for 9m (FailoverComplete)", "Primary:      cache-0", "cache-1   replica   10.244.2.4   9811459   544   true", "(3 earlier: kubectl valkey history cache -n status-and-history)"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q", want)
		}
	}

	out, err = kubectlValkey(t, "status", "cache", "-n", ns, "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	var st v1alpha1.ValkeyClusterStatus
	if err := yaml.UnmarshalStrict([]byte(out), &st); err != nil {
		t.Fatalf("status -o yaml is not a ValkeyClusterStatus: %v\n%s", err, out)
	}
	if st.State != v1alpha1.StateSteady || len(st.History) != len(lifeOf) || len(st.Nodes) != 3 || len(st.Conditions) != 7 {
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
	var entries []v1alpha1.HistoryEntry
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

// operator serves the journal document on 127.0.0.1, as the operator's HTTP port would.
func operator(t *testing.T) (url string, port int) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/journal/history-full/cache" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(journalDocument))
	}))
	t.Cleanup(srv.Close)
	port, err := strconv.Atoi(srv.URL[strings.LastIndex(srv.URL, ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	return srv.URL, port
}

// operatorPod creates a pod labelled as the operator's, with ip (if any) and Ready as given.
func operatorPod(t *testing.T, ns, name, ip string, ready bool) {
	t.Helper()
	ctx := context.Background()
	pods := shared.core.CoreV1().Pods(ns)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "valkey-operator"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "valkey-operator:dev"}}},
	}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	if ip != "" {
		created.Status.PodIP = ip
		created.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	}
	if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// --full reads the operator's journal, at --operator-url or on the first Ready operator pod,
// and says what it tried when it cannot.
func TestHistoryFull(t *testing.T) {
	ns := namespace(t, "history-full")
	url, port := operator(t)

	out, err := kubectlValkey(t, "history", "cache", "-n", ns, "--full", "--operator-url", url)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "history-full.txt", []byte(out))
	for _, want := range []string{"\n      ... 2 transitions not journaled (seq 1-2) ...\n", "\n3*  ", "\n4*  ", "\n5   ", "\n* backfilled"} {
		if !strings.Contains(out, want) {
			t.Errorf("--full output lacks %q", want)
		}
	}

	// Found through the API: the Ready pod with an IP is dialled, the others are not.
	opNS := namespace(t, "operator-found")
	operatorPod(t, opNS, "valkey-operator-0", "127.0.0.2", false)
	operatorPod(t, opNS, "valkey-operator-1", "127.0.0.1", true)
	operatorPod(t, opNS, "valkey-operator-2", "", true)
	found, err := kubectlValkey(t, "history", "cache", "-n", ns, "--full", "--operator-namespace", opNS, "--operator-port", strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	if found != out {
		t.Errorf("through the operator's pod:\n%s\nwant as through --operator-url:\n%s", found, out)
	}

	// Every replica serves its journal, but only the leader's is current: the pod holding the
	// leader election Lease is tried first, though another comes first by name.
	leaderNS := namespace(t, "operator-leader")
	port2 := journalServersOnOnePort(t, map[string]string{
		followerIP: strings.Replace(journalDocument, `{"kind":"transition","entry":{"Seq":6`, `{"kind":"ignored","entry":{"Seq":6`, 1),
		leaderIP:   journalDocument,
	})
	operatorPod(t, leaderNS, "valkey-operator-a", followerIP, true)
	operatorPod(t, leaderNS, "valkey-operator-b", leaderIP, true)
	holder := "valkey-operator-b_5f0c8e2a-3d4b-4c1e-9a7f-2b6d8e0c1a3f"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "valkey-operator.valkey.fsm.dev"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	if _, err := shared.core.CoordinationV1().Leases(leaderNS).Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fromLeader, err := kubectlValkey(t, "history", "cache", "-n", ns, "--full", "--operator-namespace", leaderNS, "--operator-port", strconv.Itoa(port2))
	if err != nil {
		t.Fatal(err)
	}
	if fromLeader != out {
		t.Errorf("with a leader:\n%s\nwant the leader's journal:\n%s", fromLeader, out)
	}

	// A Ready pod where nothing listens.
	deadNS := namespace(t, "operator-dead")
	operatorPod(t, deadNS, "valkey-operator-0", "127.0.0.1", true)
	_, err = kubectlValkey(t, "history", "cache", "-n", ns, "--full", "--operator-namespace", deadNS, "--operator-port", strconv.Itoa(closedPort(t)))
	if err == nil {
		t.Fatal("no operator listens, yet no error")
	}
	for _, want := range []string{"tried:", "pod valkey-operator-0:", "connection refused", "kubectl port-forward -n operator-dead pod/valkey-operator-0", "--operator-url http://127.0.0.1:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	// No operator pod at all.
	emptyNS := namespace(t, "operator-missing")
	_, err = kubectlValkey(t, "history", "cache", "-n", ns, "--full", "--operator-namespace", emptyNS)
	if err == nil || !strings.Contains(err.Error(), "no Ready pod with an IP is labelled app.kubernetes.io/name=valkey-operator in namespace operator-missing") || !strings.Contains(err.Error(), "--operator-url") {
		t.Errorf("no operator pod: %v", err)
	}

	_, err = kubectlValkey(t, "history", "cache", "-n", ns, "--full", "--watch")
	if err == nil || !strings.Contains(err.Error(), "cannot be combined") {
		t.Errorf("--full --watch: %v", err)
	}
}

// The fake operator pods of the leader test listen on addresses of this package's own
// loopback range (serviceRange), where the API server allocates no ClusterIP because no test
// creates a Service, and no other package listens.
const (
	followerIP = "127.253.255.1"
	leaderIP   = "127.253.255.2"
)

// journalServersOnOnePort serves, on each address, its journal document for
// history-full/cache, all on the same port (as every operator pod listens on 8082), and
// returns the port.
func journalServersOnOnePort(t *testing.T, docs map[string]string) int {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		var listeners []net.Listener
		port := 0
		for ip := range docs {
			l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
			if err != nil {
				break // the port is taken on this address: try another
			}
			port = l.Addr().(*net.TCPAddr).Port
			listeners = append(listeners, l)
		}
		if len(listeners) < len(docs) {
			for _, l := range listeners {
				l.Close()
			}
			continue
		}
		for _, l := range listeners {
			doc := docs[l.Addr().(*net.TCPAddr).IP.String()]
			srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/journal/history-full/cache" {
					http.NotFound(w, r)
					return
				}
				_, _ = w.Write([]byte(doc))
			})}}
			srv.Start()
			t.Cleanup(srv.Close)
		}
		return port
	}
	t.Fatal("no port free on every address")
	return 0
}

func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// failover and restart only write intent: the annotations the operator acts on.
func TestFailoverAndRestartWriteIntent(t *testing.T) {
	ns := namespace(t, "intent")
	createCluster(t, ns, "cache")
	annotations := func() map[string]string {
		t.Helper()
		u, err := kube.GetCluster(context.Background(), shared.dyn, ns, "cache")
		if err != nil {
			t.Fatal(err)
		}
		return u.GetAnnotations()
	}
	if out, err := kubectlValkey(t, "failover", "cache", "-n", ns); err != nil || !strings.Contains(out, "switchover of cache to auto requested") {
		t.Fatalf("failover: %v\n%s", err, out)
	}
	if got := annotations()[v1alpha1.AnnotationSwitchoverTo]; got != v1alpha1.SwitchoverAuto {
		t.Fatalf("switchover annotation = %q, want %q", got, v1alpha1.SwitchoverAuto)
	}
	if _, err := kubectlValkey(t, "failover", "cache", "-n", ns, "--to", "cache-2"); err != nil {
		t.Fatal(err)
	}
	if got := annotations()[v1alpha1.AnnotationSwitchoverTo]; got != "cache-2" {
		t.Fatalf("switchover annotation = %q, want cache-2", got)
	}
	if out, err := kubectlValkey(t, "restart", "cache", "-n", ns); err != nil || !strings.Contains(out, "rolling restart of cache requested at 2026-03-01T12:00:00Z") {
		t.Fatalf("restart: %v\n%s", err, out)
	}
	if got := annotations()[v1alpha1.AnnotationRestartRequested]; got != "2026-03-01T12:00:00Z" {
		t.Fatalf("restart annotation = %q", got)
	}
	if _, err := kubectlValkey(t, "failover", "missing", "-n", ns); err == nil {
		t.Fatal("failover of a missing cluster succeeded")
	}
}
