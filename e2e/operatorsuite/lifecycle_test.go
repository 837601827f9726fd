package operatorsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// printedColumns asks the API server for the Table view kubectl get prints of v1alpha1.
func printedColumns(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	return printedColumnsOf(t, "v1alpha1", ns, name)
}

// printedColumnsOf asks the API server for the Table view kubectl get prints of a version.
func printedColumnsOf(t *testing.T, version, ns, name string) map[string]string {
	t.Helper()
	raw, err := cl.Clientset().CoreV1().RESTClient().Get().
		AbsPath("/apis/valkey.fsm.dev", version, "namespaces", ns, "valkeyclusters", name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("table has %d rows", len(table.Rows))
	}
	out := map[string]string{}
	for i, c := range table.ColumnDefinitions {
		out[c.Name] = fmt.Sprint(table.Rows[0].Cells[i])
	}
	return out
}

func TestStandaloneReachesSteadyWithItsPrintedColumns(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	if err := k.Create(ctxFor(t, 10*time.Second), newCluster(ns, "solo", v1alpha1.TopologyStandalone, 1)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "solo", 2*time.Minute, "Steady", steadyWith(1))
	cols := printedColumns(t, ns, "solo")
	want := map[string]string{"State": "Steady", "Topology": "Standalone", "Ready": "1/1", "Primary": "solo-0"}
	for k, v := range want {
		if cols[k] != v {
			t.Errorf("printed column %s = %q, want %q (all: %v)", k, cols[k], v, cols)
		}
	}
	if _, ok := cols["Age"]; !ok {
		t.Errorf("no Age column: %v", cols)
	}
	// v1beta1 leads with the phase, what people read (a planned hand-over is not a failure).
	if beta := printedColumnsOf(t, "v1beta1", ns, "solo"); beta["Phase"] != "Steady" || beta["State"] != "Steady" {
		t.Errorf("v1beta1 printed Phase %q and State %q, want Steady and Steady (all: %v)", beta["Phase"], beta["State"], beta)
	}
	writable(t, vc)
}

func TestScalingConvergesAndShowsInHistory(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 5*time.Minute)
	if err := k.Create(ctx, newCluster(ns, "scale", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "scale", 2*time.Minute, "Steady with 3", steadyWith(3))
	scale := func(n int32) {
		vc := get(t, ns, "scale")
		vc.Spec.Replicas = n
		update(t, ctx, vc)
	}
	scale(5)
	vc := waitFor(t, ns, "scale", 2*time.Minute, "Steady with 5", steadyWith(5))
	checkReplication(t, vc, 4)
	// Put the primary on an ordinal the scale-down removes: it must hand over first.
	vc.Annotations = map[string]string{v1beta1.AnnotationSwitchoverTo: "scale-4"}
	update(t, ctx, vc)
	vc = waitFor(t, ns, "scale", 2*time.Minute, "scale-4 primary", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(5)(vc) && vc.Status.Primary == "scale-4" && vc.Annotations[v1beta1.AnnotationSwitchoverTo] == ""
	})
	w := startWriter(ctx, writable(t, vc), "scale")
	// Each removed replica's own log, read from now on (held open: the file goes with the
	// pod): Valkey says when it stopped following, and when it was asked to stop.
	removedLogs := map[string]*os.File{}
	for _, pod := range []string{"scale-2", "scale-3", "scale-4"} {
		removedLogs[pod] = openLogFromNow(t, ns, pod)
	}
	scale(2)
	vc = waitFor(t, ns, "scale", 2*time.Minute, "Steady with 2", steadyWith(2))
	// The removed replicas were detached before their pods stopped, so that none acknowledged
	// a write the replicas that stay might lack.
	detached := fmt.Sprintf("REPLICAOF %s:%d enabled", valkey.PlaceholderHost, valkey.PlaceholderPort)
	for pod, f := range removedLogs {
		out, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		log := string(out)
		stop, detach := strings.Index(log, "Received SIGTERM"), strings.Index(log, detached)
		if stop < 0 || detach < 0 || detach > stop {
			t.Errorf("%s, removed by the scale-down: detached at byte %d, stopped at byte %d of its log since; want it detached before it stopped:\n%s", pod, detach, stop, log)
		}
	}
	if lost, acked := w.lost(t, writable(t, vc)); lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost scaling down over the primary:\n%s", lost, acked, summary(vc))
	}
	checkReplication(t, vc, 1)
	handedOver := false
	for _, h := range vc.Status.History {
		handedOver = handedOver || h.Event == "scale-down-hand-over"
	}
	if !handedOver {
		t.Fatalf("the primary on a removed ordinal was not handed over first:\n%s", summary(vc))
	}
	changes := 0
	for _, h := range vc.Status.History {
		if h.Event == "replicas-changed" {
			changes++
		}
	}
	if changes != 2 {
		t.Fatalf("scaling 3 -> 5 -> 2 should show two replicas-changed transitions in history:\n%s", summary(vc))
	}
}

// openLogFromNow opens the valkey container's log of pod, positioned at its end.
func openLogFromNow(t *testing.T, ns, pod string) *os.File {
	t.Helper()
	path, err := cl.LogPath(ns, pod, "valkey")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	return f
}

// checkReplication checks the status shows one primary and want linked replicas, and that a
// write through the client Service reaches every replica.
func checkReplication(t *testing.T, vc *v1alpha1.ValkeyCluster, want int) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	pass := password(t, vc)
	c := writable(t, vc)
	key := fmt.Sprintf("k-%d", time.Now().UnixNano())
	if err := c.Do(ctx, c.B().Set().Key(key).Value("v").Build()).Error(); err != nil {
		t.Fatalf("SET through the client Service: %v\n%s", err, summary(vc))
	}
	replicas := 0
	for _, n := range vc.Status.Nodes {
		if n.Role != v1alpha1.NodeRoleReplica {
			continue
		}
		replicas++
		rc := appClient(t, n.IP+":6379", pass)
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			v, err := rc.Do(ctx, rc.B().Get().Key(key).Build()).ToString()
			return err == nil && v == "v", nil
		})
		if err != nil {
			t.Fatalf("replica %s (%s) never got %s: %v\n%s", n.Pod, n.IP, key, err, summary(vc))
		}
	}
	if replicas != want {
		t.Fatalf("want %d replicas, status shows %d:\n%s", want, replicas, summary(vc))
	}
}

func TestReplicaRecreatedWithANewIPRejoins(t *testing.T) {
	ns, ctx, vc := steadyReplication(t, "moving", 3*time.Minute)
	var victim v1alpha1.NodeStatus
	for _, n := range vc.Status.Nodes {
		if n.Role == v1alpha1.NodeRoleReplica {
			victim = n
		}
	}
	cl.SetNewIPOnRecreate(true)
	t.Cleanup(func() { cl.SetNewIPOnRecreate(false) })
	if err := cl.DeletePod(ctx, ns, victim.Pod); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "moving", 2*time.Minute, "the replica back with a new IP", func(vc *v1alpha1.ValkeyCluster) bool {
		for _, n := range vc.Status.Nodes {
			if n.Pod == victim.Pod {
				return n.IP != victim.IP && n.Role == v1alpha1.NodeRoleReplica && steadyWith(3)(vc)
			}
		}
		return false
	})
	checkReplication(t, vc, 2)
}

func TestOperatorKilledDuringBootstrapFinishesWithoutHistoryGaps(t *testing.T) {
	ns := cl.Namespace(t)
	journal := t.TempDir() + "/journal.db"
	op := startOperator(t, journal)
	ctx := ctxFor(t, 3*time.Minute)
	if err := k.Create(ctx, newCluster(ns, "phoenix", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	// Kill it as soon as it has started the work: objects exist, pods not all up yet.
	waitFor(t, ns, "phoenix", time.Minute, "bootstrapping started", func(vc *v1alpha1.ValkeyCluster) bool {
		var sts appsv1.StatefulSet
		return vc.Status.State == v1alpha1.StateBootstrapping &&
			k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "phoenix"}, &sts) == nil
	})
	op.stop(t)
	mid := get(t, ns, "phoenix")
	if mid.Status.State != v1alpha1.StateBootstrapping {
		t.Logf("the operator got further than planned before it stopped: %s", mid.Status.State)
	}
	op2 := startOperator(t, journal)
	vc := waitFor(t, ns, "phoenix", 2*time.Minute, "Steady after the restart", steadyWith(3))
	checkHistoryChains(t, vc)
	// The journal holds the same transitions, each once.
	records := journalRecords(t, op2, ns, "phoenix")
	if len(records) != len(vc.Status.History) {
		t.Fatalf("journal has %d records, history %d: %+v", len(records), len(vc.Status.History), records)
	}
	for i, r := range records {
		if r.Entry.Seq != uint64(i+1) || r.Entry.To != string(vc.Status.History[i].To) {
			t.Fatalf("journal record %d = %+v, history says %+v", i, r, vc.Status.History[i])
		}
	}
}

func TestDriftIsRepairedAndDeletionRemovesEverything(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 3*time.Minute)
	if err := k.Create(ctx, newCluster(ns, "tidy", v1alpha1.TopologyReplication, 2)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "tidy", 2*time.Minute, "Steady", steadyWith(2))
	names := kube.NamesOf(valkeyapi.HubOf(vc))
	var svc corev1.Service
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Client}, &svc); err != nil {
		t.Fatal(err)
	}
	svc.Spec.Selector = map[string]string{"app": "somebody-else"}
	if err := k.Update(ctx, &svc); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var cur corev1.Service
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Client}, &cur); err != nil {
			return false, nil
		}
		return cur.Spec.Selector[kube.LabelRole] == kube.RolePrimary, nil
	})
	if err != nil {
		t.Fatalf("the edited client Service was not repaired: %v", err)
	}
	if err := k.Delete(ctx, vc); err != nil {
		t.Fatal(err)
	}
	// Owned objects go through the garbage collector (owner references); pods with them.
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		left := 0
		for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &corev1.ConfigMap{}, &corev1.Secret{}} {
			for _, name := range []string{names.StatefulSet, names.Headless, names.Replicas, names.Config, names.Auth} {
				if k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj) == nil {
					left++
				}
			}
		}
		var pods corev1.PodList
		_ = k.List(ctx, &pods, client.InNamespace(ns))
		var vcGone v1alpha1.ValkeyCluster
		err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tidy"}, &vcGone)
		return left == 0 && len(pods.Items) == 0 && apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("objects of a deleted cluster are left: %v", err)
	}
}
