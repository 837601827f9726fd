package operatorsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/internal/etcdkv"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
	"github.com/valkey-fsm/valkey-operator/operator/storageversion"
)

// upgradeKeys is how many keys each cluster gets before the upgrade and must still serve after.
const upgradeKeys = 200

// upgradeCluster is one ValkeyCluster of the upgrade test and how to tell it converged.
type upgradeCluster struct {
	vc     *v1alpha1.ValkeyCluster
	pods   int
	steady func(*v1alpha1.ValkeyCluster) bool
}

// TestHelmUpgradeFromThePreviousChartKeepsEveryClusterRunning installs the chart of the last
// release before v1beta1 (previousCommit: CRDs serving and storing v1alpha1 only, in crds/,
// and its operator), runs a cluster of every topology with keys, a ValkeyACL each and a
// ValkeyBackup under it, and upgrades the release to this chart with helm upgrade
// --take-ownership (the CRDs were not the release's: Helm installed them from crds/). Then:
// the CRDs serve v1beta1 and store it, and the new operator has moved every stored object
// there (etcd, read directly, holds v1beta1 JSON; storedVersions is [v1beta1]; its log says so
// per kind) under its chart's RBAC, refused nothing; v1alpha1 and v1beta1 reads work; no
// cluster left Steady at any moment (watched, and no new history entry); no Valkey process
// restarted (pod UIDs, restart counts, each node's INFO run_id); no StatefulSet changed (its
// generation); every key is still there; and the new operator runs every cluster (it applies
// a change of each cluster's ValkeyACL).
//
// It runs on a local cluster of its own: the suite's CRDs store v1beta1 and hold objects of
// other tests, so the API server refuses the previous chart's v1alpha1-only CRDs over them,
// and putting them back afterwards would not give an upgrade from the state an old
// installation is in (storedVersions [v1alpha1], objects in etcd as v1alpha1).
func TestHelmUpgradeFromThePreviousChartKeepsEveryClusterRunning(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	start := time.Now()
	prev := buildPreviousRelease(t, previousCommit)
	t.Logf("the release of %s: built or found in %s", previousCommit[:7], time.Since(start).Round(time.Second))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t0 := time.Now()
	lc, err := localcluster.Start(ctx, localcluster.Options{
		OperatorLayout: operatorLayout,
		Images:         map[string]localcluster.Image{prev.ImageRef: prev.Image.Image},
		Log:            cl.Log("upgrade-cluster"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lc.Stop(); err != nil {
			t.Errorf("stopping the upgrade's local cluster: %v", err)
		}
	})
	kc, err := client.NewWithWatch(lc.RESTConfig(), client.Options{Scheme: manager.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("local cluster up in %s", time.Since(t0).Round(time.Second))

	const opNS, release = "valkey-operator-system", "valkey-operator"
	// The aggregated journal API is off: the local API server reaches a Service only once it
	// is pointed at a pod, and discovery with an unavailable APIService fails helm.
	settings := []string{"--set", "replicas=1", "--set", "retryInterval=1s", "--set", "journal.api.enabled=false"}
	t0 = time.Now()
	helmOn(t, lc.KubeconfigPath(), append([]string{"install", release, prev.Chart, "--namespace", opNS, "--create-namespace",
		"--set", "image.tag=" + strings.TrimPrefix(prev.ImageRef, "ghcr.io/valkey-fsm/valkey-operator:"), "--wait", "--timeout", "3m"}, settings...)...)
	t.Logf("previous chart installed in %s", time.Since(t0).Round(time.Second))
	checkStoredVersions(t, ctx, lc, []string{"v1alpha1"})

	const ns = "apps"
	if err := kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	sharded := newCluster(ns, "sharded", v1alpha1.TopologyCluster, 2)
	sharded.Spec.Shards = 3
	clusters := []upgradeCluster{
		{vc: newCluster(ns, "solo", v1alpha1.TopologyStandalone, 1), pods: 1, steady: steadyWith(1)},
		{vc: newCluster(ns, "pair", v1alpha1.TopologyReplication, 2), pods: 2, steady: steadyWith(2)},
		{vc: sharded, pods: 6, steady: steadyCluster(3, 2)},
	}
	objects := []client.Object{}
	for _, c := range clusters {
		if err := kc.Create(ctx, c.vc); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, c.vc)
	}
	t0 = time.Now()
	for i, c := range clusters {
		clusters[i].vc = waitOn(t, kc, c.vc, 4*time.Minute, "Steady", c.steady)
	}
	t.Logf("clusters Steady under the previous operator in %s", time.Since(t0).Round(time.Second))
	for _, c := range clusters {
		writeUpgradeKeys(t, ctx, kc, c.vc)
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.vc.Name + "-reader"}, StringData: map[string]string{"password": "reader-" + c.vc.Name}}
		if err := kc.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
		acl := &v1alpha1.ValkeyACL{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.vc.Name + "-reader"}, Spec: v1alpha1.ValkeyACLSpec{
			Cluster: c.vc.Name, User: "reader", Rules: []v1alpha1.ACLRule{"~key:*", "+get"}, PasswordSecrets: []v1alpha1.SecretKeyRef{{Name: secret.Name}},
		}}
		if err := kc.Create(ctx, acl); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, acl)
	}
	backup := &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "solo-once"}, Spec: v1alpha1.ValkeyBackupSpec{Cluster: "solo"}}
	if err := kc.Create(ctx, backup); err != nil {
		t.Fatal(err)
	}
	objects = append(objects, backup)
	for _, c := range clusters {
		waitACLOn(t, kc, ns, c.vc.Name+"-reader")
	}
	before := snapshotDataPlane(t, ctx, kc, ns, clusters)
	checkStoredAs(t, ctx, lc, objects, "v1alpha1")

	// Every state every cluster is in from now on, as a watch delivers it.
	watched := watchStates(ctx, kc, ns)

	t0 = time.Now()
	helmOn(t, lc.KubeconfigPath(), append([]string{"upgrade", release, "../../charts/valkey-operator", "--namespace", opNS,
		"--take-ownership", "--reset-values", "--wait", "--timeout", "3m"}, settings...)...)
	upgraded := time.Since(t0)
	// The API server reaches the new operator's conversion webhook (see PointServiceAtPod).
	if err := lc.PointServiceAtPod(ctx, opNS, release+"-webhook", nil); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	waitStoredVersions(t, ctx, lc, []string{"v1beta1"}, 3*time.Minute)
	t.Logf("helm upgrade took %s; storedVersions were [v1beta1] %s after the webhook was reachable", upgraded.Round(time.Second), time.Since(t0).Round(time.Second))
	checkStoredAs(t, ctx, lc, objects, "v1beta1")
	checkMigrationLogged(t, lc, opNS)
	for _, o := range objects {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object)); err != nil {
			t.Errorf("reading %T %s as v1alpha1 after the upgrade: %v", o, o.GetName(), err)
		}
	}
	for _, c := range clusters {
		var hub v1beta1.ValkeyCluster
		if err := kc.Get(ctx, client.ObjectKeyFromObject(c.vc), &hub); err != nil || hub.Status.State != v1beta1.StateSteady {
			t.Errorf("reading %s as v1beta1 after the upgrade: state %q, %v", c.vc.Name, hub.Status.State, err)
		}
	}

	// The new operator runs every cluster: it applies a new generation of each one's ACL.
	t0 = time.Now()
	for _, c := range clusters {
		var acl v1alpha1.ValkeyACL
		key := client.ObjectKey{Namespace: ns, Name: c.vc.Name + "-reader"}
		if err := kc.Get(ctx, key, &acl); err != nil {
			t.Fatal(err)
		}
		acl.Spec.Rules = append(acl.Spec.Rules, "+exists")
		if err := kc.Update(ctx, &acl); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range clusters {
		waitACLOn(t, kc, ns, c.vc.Name+"-reader")
	}
	t.Logf("the new operator applied every cluster's ACL change in %s", time.Since(t0).Round(time.Second))

	after := snapshotDataPlane(t, ctx, kc, ns, clusters)
	for _, diff := range before.diff(after) {
		t.Error(diff)
	}
	for _, c := range clusters {
		readUpgradeKeys(t, ctx, kc, c.vc)
	}
	states, versions := watched.stop()
	if len(states) > 0 {
		t.Errorf("a cluster left Steady during the upgrade: %v", states)
	}
	for _, c := range clusters {
		// The version listed at the start and at least the migration's rewrite.
		if versions[c.vc.Name] < 2 {
			t.Errorf("the watch delivered %d versions of %s: it saw nothing of the upgrade", versions[c.vc.Name], c.vc.Name)
		}
	}
	checkChartOperatorRefusedNothing(t, lc, opNS, release)
	t.Logf("the whole test took %s", time.Since(start).Round(time.Second))
}

// waitOn polls a cluster of kc until cond holds.
func waitOn(t *testing.T, kc client.Client, vc *v1alpha1.ValkeyCluster, timeout time.Duration, what string, cond func(*v1alpha1.ValkeyCluster) bool) *v1alpha1.ValkeyCluster {
	t.Helper()
	var last v1alpha1.ValkeyCluster
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(vc), &last); err != nil {
			return false, nil
		}
		return cond(&last), nil
	})
	if err != nil {
		t.Fatalf("%s/%s: %s: %v\n%s", vc.Namespace, vc.Name, what, err, summary(&last))
	}
	return &last
}

// waitACLOn waits until the ValkeyACL's status says its generation is Applied.
func waitACLOn(t *testing.T, kc client.Client, ns, name string) {
	t.Helper()
	var a v1alpha1.ValkeyACL
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &a)
		return err == nil && a.Status.ObservedGeneration == a.Generation && a.Status.Phase == "Applied", nil
	})
	if err != nil {
		t.Fatalf("ValkeyACL %s/%s not Applied at generation %d: %+v", ns, name, a.Generation, a.Status)
	}
}

// upgradeClient connects to vc as an application: through its client Service, or as a
// cluster client seeded with a pod for the Cluster topology.
func upgradeClient(t *testing.T, ctx context.Context, kc client.Client, vc *v1alpha1.ValkeyCluster) vk.Client {
	t.Helper()
	var s corev1.Secret
	if err := kc.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: kube.NamesOf(vc).Auth}, &s); err != nil {
		t.Fatal(err)
	}
	pass := string(s.Data[kube.KeyClientPassword])
	if vc.Spec.Topology == v1alpha1.TopologyCluster {
		return clusterClient(t, net.JoinHostPort(vc.Status.Nodes[0].IP, "6379"), pass)
	}
	var svc corev1.Service
	if err := kc.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: kube.NamesOf(vc).Client}, &svc); err != nil {
		t.Fatal(err)
	}
	return appClient(t, net.JoinHostPort(svc.Spec.ClusterIP, "6379"), pass)
}

func writeUpgradeKeys(t *testing.T, ctx context.Context, kc client.Client, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	c := upgradeClient(t, ctx, kc, vc)
	for i := range upgradeKeys {
		if err := c.Do(ctx, c.B().Set().Key(fmt.Sprintf("key:%d", i)).Value(vc.Name).Build()).Error(); err != nil {
			t.Fatalf("%s: SET key:%d: %v", vc.Name, i, err)
		}
	}
}

func readUpgradeKeys(t *testing.T, ctx context.Context, kc client.Client, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	c := upgradeClient(t, ctx, kc, vc)
	for i := range upgradeKeys {
		got, err := c.Do(ctx, c.B().Get().Key(fmt.Sprintf("key:%d", i)).Build()).ToString()
		if err != nil || got != vc.Name {
			t.Fatalf("%s: GET key:%d = %q, %v after the upgrade; want %q", vc.Name, i, got, err, vc.Name)
		}
	}
}

// dataPlane is what must not change in an upgrade of the operator.
type dataPlane struct {
	pods     map[string]string // pod -> UID, restart counts, INFO run_id
	sets     map[string]int64  // StatefulSet -> generation
	lastSeqs map[string]int64  // cluster -> its newest history entry
}

func snapshotDataPlane(t *testing.T, ctx context.Context, kc client.Client, ns string, clusters []upgradeCluster) dataPlane {
	t.Helper()
	d := dataPlane{pods: map[string]string{}, sets: map[string]int64{}, lastSeqs: map[string]int64{}}
	for _, c := range clusters {
		var vc v1alpha1.ValkeyCluster
		if err := kc.Get(ctx, client.ObjectKeyFromObject(c.vc), &vc); err != nil {
			t.Fatal(err)
		}
		if h := vc.Status.History; len(h) > 0 {
			d.lastSeqs[vc.Name] = h[len(h)-1].Seq
		}
		var s corev1.Secret
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: kube.NamesOf(&vc).Auth}, &s); err != nil {
			t.Fatal(err)
		}
		var pods corev1.PodList
		if err := kc.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{kube.LabelCluster: vc.Name}); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != c.pods {
			t.Fatalf("%s has %d pods, want %d", vc.Name, len(pods.Items), c.pods)
		}
		for _, p := range pods.Items {
			restarts := []string{}
			for _, cs := range p.Status.ContainerStatuses {
				restarts = append(restarts, fmt.Sprintf("%s:%d", cs.Name, cs.RestartCount))
			}
			slices.Sort(restarts)
			runID := nodeRunID(t, ctx, p.Status.PodIP, string(s.Data[kube.KeyClientPassword]))
			d.pods[p.Name] = fmt.Sprintf("uid %s restarts %v run_id %s", p.UID, restarts, runID)
		}
	}
	var sets appsv1.StatefulSetList
	if err := kc.List(ctx, &sets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range sets.Items {
		d.sets[s.Name] = s.Generation
	}
	return d
}

// diff says what changed from d to after.
func (d dataPlane) diff(after dataPlane) []string {
	var out []string
	for name, v := range d.pods {
		if after.pods[name] != v {
			out = append(out, fmt.Sprintf("pod %s: before the upgrade %s, after %q", name, v, after.pods[name]))
		}
	}
	for name, g := range d.sets {
		if after.sets[name] != g {
			out = append(out, fmt.Sprintf("StatefulSet %s: generation %d before the upgrade, %d after", name, g, after.sets[name]))
		}
	}
	for name, s := range d.lastSeqs {
		if after.lastSeqs[name] != s {
			out = append(out, fmt.Sprintf("cluster %s: newest history entry #%d before the upgrade, #%d after", name, s, after.lastSeqs[name]))
		}
	}
	if len(after.pods) != len(d.pods) || len(after.sets) != len(d.sets) {
		out = append(out, fmt.Sprintf("pods %d -> %d, StatefulSets %d -> %d", len(d.pods), len(after.pods), len(d.sets), len(after.sets)))
	}
	return out
}

// nodeRunID asks a node itself (INFO server, as the application user) for its run_id, which a
// new process of valkey-server changes.
func nodeRunID(t *testing.T, ctx context.Context, ip, pass string) string {
	t.Helper()
	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{net.JoinHostPort(ip, "6379")}, Password: pass,
		DisableCache: true, ForceSingleClient: true, Dialer: net.Dialer{Timeout: 2 * time.Second}})
	if err != nil {
		t.Fatalf("%s: %v", ip, err)
	}
	defer c.Close()
	info, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
	if err != nil {
		t.Fatalf("INFO server of %s: %v", ip, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	t.Fatalf("INFO server of %s has no run_id", ip)
	return ""
}

// stateWatch collects every state other than Steady that a watch of the namespace's
// ValkeyClusters delivers, re-watching from the last resourceVersion when the API server ends
// the watch (it does when a CRD changes) or cannot serve it for a moment (the conversion
// webhook moving to the new operator).
type stateWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	seen   []string
	// versions is every resourceVersion delivered per cluster: the watch must be seen to
	// deliver the upgrade's own writes (the migration's rewrite of each cluster) for its
	// silence about other states to mean anything.
	versions map[string][]string
}

func watchStates(ctx context.Context, kc client.WithWatch, ns string) *stateWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &stateWatch{cancel: cancel, done: make(chan struct{}), versions: map[string][]string{}}
	go func() {
		defer close(w.done)
		rv := ""
		for ctx.Err() == nil {
			if rv == "" {
				var list v1alpha1.ValkeyClusterList
				if err := kc.List(ctx, &list, client.InNamespace(ns)); err != nil {
					time.Sleep(200 * time.Millisecond)
					continue
				}
				for i := range list.Items {
					w.note(&list.Items[i])
				}
				rv = list.ResourceVersion
			}
			wi, err := kc.Watch(ctx, &v1alpha1.ValkeyClusterList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			for ev := range wi.ResultChan() {
				switch ev.Type {
				case watch.Added, watch.Modified, watch.Bookmark:
					if vc, ok := ev.Object.(*v1alpha1.ValkeyCluster); ok {
						rv = vc.ResourceVersion
						if ev.Type != watch.Bookmark {
							w.note(vc)
						}
					}
				case watch.Error:
					rv = "" // too old: list again
				}
			}
			wi.Stop()
		}
	}()
	return w
}

func (w *stateWatch) note(vc *v1alpha1.ValkeyCluster) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if vs := w.versions[vc.Name]; len(vs) == 0 || vs[len(vs)-1] != vc.ResourceVersion {
		w.versions[vc.Name] = append(vs, vc.ResourceVersion)
	}
	if vc.Status.State != v1alpha1.StateSteady {
		w.seen = append(w.seen, fmt.Sprintf("%s %s (resourceVersion %s)", vc.Name, vc.Status.State, vc.ResourceVersion))
	}
}

// stop ends the watch and returns the states other than Steady it saw, and how many versions
// of each cluster it saw.
func (w *stateWatch) stop() (states []string, versions map[string]int) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	versions = map[string]int{}
	for name, vs := range w.versions {
		versions[name] = len(vs)
	}
	return w.seen, versions
}

func checkStoredVersions(t *testing.T, ctx context.Context, lc *localcluster.Cluster, want []string) {
	t.Helper()
	cs := apiextensionsclient.NewForConfigOrDie(lc.RESTConfig()).ApiextensionsV1().CustomResourceDefinitions()
	for _, name := range storageversion.CRDs {
		crd, err := cs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(crd.Status.StoredVersions, want) {
			t.Fatalf("%s: storedVersions %v, want %v", name, crd.Status.StoredVersions, want)
		}
	}
}

func waitStoredVersions(t *testing.T, ctx context.Context, lc *localcluster.Cluster, want []string, timeout time.Duration) {
	t.Helper()
	cs := apiextensionsclient.NewForConfigOrDie(lc.RESTConfig()).ApiextensionsV1().CustomResourceDefinitions()
	got := map[string][]string{}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range storageversion.CRDs {
			crd, err := cs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			got[name] = crd.Status.StoredVersions
			if !slices.Equal(crd.Status.StoredVersions, want) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("storedVersions %v, want %v for every CRD", got, want)
	}
}

// checkStoredAs reads every object from etcd (not through the API server, which answers in
// whatever version it is asked for) and checks the version it is stored in.
func checkStoredAs(t *testing.T, ctx context.Context, lc *localcluster.Cluster, objects []client.Object, version string) {
	t.Helper()
	for _, o := range objects {
		resource := map[string]string{"*v1alpha1.ValkeyCluster": "valkeyclusters", "*v1alpha1.ValkeyACL": "valkeyacls", "*v1alpha1.ValkeyBackup": "valkeybackups"}[fmt.Sprintf("%T", o)]
		got, err := etcdkv.StoredAPIVersion(ctx, lc.EtcdURL(), v1alpha1.GroupName, resource, o.GetNamespace(), o.GetName())
		if err != nil {
			t.Fatal(err)
		}
		if want := v1alpha1.GroupName + "/" + version; got != want {
			t.Errorf("%s %s/%s is stored in etcd as %s, want %s", resource, o.GetNamespace(), o.GetName(), got, want)
		}
	}
}

// checkMigrationLogged finds the new operator's log line for each kind.
func checkMigrationLogged(t *testing.T, lc *localcluster.Cluster, opNS string) {
	t.Helper()
	pl, err := lc.Clientset().CoreV1().Pods(opNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=valkey-operator"})
	if err != nil || len(pl.Items) != 1 {
		t.Fatalf("want one operator pod: %v, %v", pl, err)
	}
	path, err := lc.LogPath(opNS, pl.Items[0].Name, "operator")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	logged := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg       string `json:"msg"`
			CRD       string `json:"crd"`
			Objects   int    `json:"objects"`
			Rewritten int    `json:"rewritten"`
		}
		// How many it rewrote depends on who wrote first: the old operator's last status
		// patches and the new one's first are stored as v1beta1 too. etcd (checkStoredAs)
		// says whether every object got there.
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "stored objects moved to the storage version" && line.Rewritten <= line.Objects {
			logged[line.CRD] = fmt.Sprintf("%d objects", line.Objects)
		}
	}
	want := map[string]string{
		"valkeyclusters.valkey.fsm.dev": "3 objects",
		"valkeyacls.valkey.fsm.dev":     "3 objects",
		"valkeybackups.valkey.fsm.dev":  "1 objects",
	}
	for crd, w := range want {
		if logged[crd] != w {
			t.Errorf("the new operator logged for %s: %q, want %q", crd, logged[crd], w)
		}
	}
}

// checkChartOperatorRefusedNothing reads the upgrade cluster's audit log: the chart's operator
// (old and new, one ServiceAccount) was refused no request, and the new one set the CRDs'
// storedVersions itself.
func checkChartOperatorRefusedNothing(t *testing.T, lc *localcluster.Cluster, opNS, release string) {
	t.Helper()
	events, err := lc.AuditEvents("system:serviceaccount:" + opNS + ":" + release)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	setStored := 0
	for _, e := range events {
		if e.Forbidden() {
			errs = append(errs, fmt.Errorf("RBAC refused the chart's operator %s %s", e.Verb, e.RequestURI))
		}
		if e.Verb == "update" && e.Resource() == "apiextensions.k8s.io/customresourcedefinitions/status" && e.Code() == 200 {
			setStored++
		}
	}
	if setStored < len(storageversion.CRDs) {
		errs = append(errs, fmt.Errorf("the operator updated CRD status %d times, want once per CRD at least", setStored))
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}
