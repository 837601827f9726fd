package operatorsuite

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
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
// per kind) under its chart's RBAC, refused nothing; v1alpha1 and v1beta1 reads work; each
// cluster rolls once onto the new pod template (Valkey listens on every address of its pod)
// through the machine, a planned roll: no state but Rolling and its hand-overs (watched), no
// lost primary recorded, every pod replaced by a new valkey-server process (pod UIDs, INFO
// run_id); every key is still there; and the new operator runs every cluster (it applies a
// change of each cluster's ValkeyACL).
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

	ctx, cancel := context.WithTimeout(context.Background(), 18*time.Minute)
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
		if err := kc.Get(ctx, client.ObjectKeyFromObject(c.vc), &hub); err != nil {
			t.Errorf("reading %s as v1beta1 after the upgrade: %v", c.vc.Name, err)
		}
	}

	// This chart's Valkey pods listen on every address of the pod (a new pod template), so the
	// new operator rolls each cluster once, through the machine: a planned roll that hands
	// each primary over before its pod goes.
	t0 = time.Now()
	for i, c := range clusters {
		since := before.lastSeqs[c.vc.Name]
		clusters[i].vc = waitOn(t, kc, c.vc, 5*time.Minute, "rolled once, then Steady", func(vc *v1alpha1.ValkeyCluster) bool {
			return c.steady(vc) && historySince(vc, since, rollEnd(vc))
		})
	}
	t.Logf("every cluster rolled onto the new pod template in %s", time.Since(t0).Round(time.Second))

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
	for _, diff := range before.rolled(after) {
		t.Error(diff)
	}
	for _, c := range clusters {
		if c.vc.Spec.Topology != v1alpha1.TopologyStandalone && historySince(c.vc, before.lastSeqs[c.vc.Name], "primary-lost") {
			t.Errorf("%s recorded a lost primary during the upgrade's roll: %+v", c.vc.Name, c.vc.Status.History)
		}
	}
	for _, c := range clusters {
		readUpgradeKeys(t, ctx, kc, c.vc)
	}
	states, versions := watched.stop()
	for _, st := range states {
		// Rolling, and FailingOver for the planned hand-over of a primary within it.
		if !strings.Contains(st, " Rolling ") && !strings.Contains(st, " FailingOver ") {
			t.Errorf("a cluster was in a state other than Steady or the roll's during the upgrade: %s", st)
		}
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
	if err := kc.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: kube.NamesOf(&v1beta1.ValkeyCluster{ObjectMeta: vc.ObjectMeta}).Auth}, &s); err != nil {
		t.Fatal(err)
	}
	pass := string(s.Data[kube.KeyClientPassword])
	if vc.Spec.Topology == v1alpha1.TopologyCluster {
		return clusterClient(t, net.JoinHostPort(vc.Status.Nodes[0].IP, "6379"), pass)
	}
	var svc corev1.Service
	if err := kc.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: kube.NamesOf(&v1beta1.ValkeyCluster{ObjectMeta: vc.ObjectMeta}).Client}, &svc); err != nil {
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
