package storageversion_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/internal/etcdkv"
	"github.com/valkey-fsm/valkey-operator/operator/conversionwebhook"
	"github.com/valkey-fsm/valkey-operator/operator/storageversion"
)

const group = "valkey.fsm.dev"

// Objects written while the CRDs stored v1alpha1 are, after the storage version became
// v1beta1 and the migration ran, stored as v1beta1 in etcd (read there, not through the API
// server, which converts whatever it holds); the CRDs' storedVersions are [v1beta1]; no spec
// changed; and a writer that changed a cluster's spec and status between the migration's
// read and its write lost neither change. A second run writes nothing.
func TestMigrationRewritesEveryObjectInTheStorageVersion(t *testing.T) {
	env, cfg := server.Start(t)
	etcd := env.ControlPlane.Etcd.URL.String()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k, err := client.New(cfg, client.Options{Scheme: conversionwebhook.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()

	// Two namespaces, a bit of everything, more clusters than one page of the migration.
	var objects []client.Object
	for _, ns := range []string{"team-a", "team-b"} {
		if err := k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		for i := range 60 {
			objects = append(objects, &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("vc-%d", i)},
				Spec: v1alpha1.ValkeyClusterSpec{Topology: v1alpha1.TopologyReplication, Replicas: 3}})
		}
		objects = append(objects,
			&v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"}, Spec: v1alpha1.ValkeyBackupSpec{Cluster: "vc-0"}},
			&v1alpha1.ValkeyACL{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: v1alpha1.ValkeyACLSpec{
				Cluster: "vc-0", User: "app", Rules: []v1alpha1.ACLRule{"~app:*", "+@read"}, PasswordSecrets: []v1alpha1.SecretKeyRef{{Name: "app"}},
			}})
	}
	for _, o := range objects {
		if err := k.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	checkStored(t, ctx, etcd, objects, "v1alpha1") // or the test would prove nothing
	specsBefore := hubSpecs(t, ctx, k, objects)

	// The upgrade: every CRD now stores v1beta1 (and lists both versions as stored).
	for _, name := range storageversion.CRDs {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == "v1beta1"
		}
		if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitForV1beta1Storage(t, ctx, k, etcd)
	for _, name := range storageversion.CRDs {
		if got := storedVersions(t, ctx, crds, name); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
			t.Fatalf("after the switch %s lists storedVersions %v, want [v1alpha1 v1beta1]", name, got)
		}
	}

	// A writer changes one cluster's spec and status right between the migration's read of
	// it and its write: the write then conflicts with a real resourceVersion.
	raced := client.ObjectKey{Namespace: "team-b", Name: "vc-7"}
	var once sync.Once
	racer := func() {
		var vc v1alpha1.ValkeyCluster
		if err := k.Get(ctx, raced, &vc); err != nil {
			t.Error(err)
			return
		}
		vc.Spec.Image = "valkey/valkey:9.1"
		if err := k.Update(ctx, &vc); err != nil {
			t.Error(err)
			return
		}
		vc.Status.State = v1alpha1.StateSteady
		if err := k.Status().Update(ctx, &vc); err != nil {
			t.Error(err)
		}
	}
	m := storageversion.Migrator{Reader: k, Writer: k, CRDs: crds, StatusWriter: racingWriter{SubResourceWriter: k.Status(), race: func(o client.Object) {
		if client.ObjectKeyFromObject(o) == raced {
			once.Do(racer)
		}
	}}}
	rewritten := 0
	for _, name := range storageversion.CRDs {
		res, err := m.Migrate(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Done || res.Storage != "v1beta1" {
			t.Fatalf("%s: %+v, want it done with storage v1beta1", name, res)
		}
		rewritten += res.Rewritten
		if got := storedVersions(t, ctx, crds, name); !slices.Equal(got, []string{"v1beta1"}) {
			t.Fatalf("after the migration %s lists storedVersions %v, want [v1beta1]", name, got)
		}
	}
	// Every object was stored as v1alpha1; the raced one was written in v1beta1 by the racer
	// already, so the migration's own write of it may be a no-op.
	if rewritten < len(objects)-1 {
		t.Errorf("the migration says it rewrote %d objects of %d", rewritten, len(objects))
	}
	checkStored(t, ctx, etcd, objects, "v1beta1")

	var vc v1alpha1.ValkeyCluster
	if err := k.Get(ctx, raced, &vc); err != nil {
		t.Fatal(err)
	}
	if vc.Spec.Image != "valkey/valkey:9.1" || vc.Status.State != v1alpha1.StateSteady {
		t.Fatalf("the concurrent writer's change was lost: image %q, state %q", vc.Spec.Image, vc.Status.State)
	}
	specsAfter := hubSpecs(t, ctx, k, objects)
	for key, before := range specsBefore {
		if key == raced.String() {
			continue
		}
		if specsAfter[key] != before {
			t.Errorf("the migration changed the spec of %s:\n before %s\n after  %s", key, before, specsAfter[key])
		}
	}

	// Done is done: a second run reads the CRDs and writes nothing.
	for _, name := range storageversion.CRDs {
		res, err := m.Migrate(ctx, name)
		if err != nil || res.Done || res.Objects != 0 {
			t.Fatalf("a second migration of %s: %+v, %v; want nothing done", name, res, err)
		}
	}
}

// racingWriter runs race before every status update it forwards.
type racingWriter struct {
	client.SubResourceWriter
	race func(client.Object)
}

func (w racingWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.race(obj)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

// checkStored fails unless etcd holds every object in version.
func checkStored(t *testing.T, ctx context.Context, etcd string, objects []client.Object, version string) {
	t.Helper()
	wrong := 0
	for _, o := range objects {
		got, err := etcdkv.StoredAPIVersion(ctx, etcd, group, resourceOf(o), o.GetNamespace(), o.GetName())
		if err != nil {
			t.Fatal(err)
		}
		if got != group+"/"+version {
			if wrong++; wrong <= 5 {
				t.Errorf("%s %s/%s is stored as %s, want %s/%s", resourceOf(o), o.GetNamespace(), o.GetName(), got, group, version)
			}
		}
	}
	if wrong > 0 {
		t.Fatalf("%d of %d objects are not stored as %s", wrong, len(objects), version)
	}
}

func resourceOf(o client.Object) string {
	switch o.(type) {
	case *v1alpha1.ValkeyCluster:
		return "valkeyclusters"
	case *v1alpha1.ValkeyBackup:
		return "valkeybackups"
	default:
		return "valkeyacls"
	}
}

// hubSpecs reads every object through v1beta1 and returns its spec as JSON, with its
// generation, by namespace/name.
func hubSpecs(t *testing.T, ctx context.Context, k client.Client, objects []client.Object) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objects {
		var hub client.Object
		var spec any
		switch o.(type) {
		case *v1alpha1.ValkeyCluster:
			h := &v1beta1.ValkeyCluster{}
			hub, spec = h, &h.Spec
		case *v1alpha1.ValkeyBackup:
			h := &v1beta1.ValkeyBackup{}
			hub, spec = h, &h.Spec
		default:
			h := &v1beta1.ValkeyACL{}
			hub, spec = h, &h.Spec
		}
		if err := k.Get(ctx, client.ObjectKeyFromObject(o), hub); err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		out[client.ObjectKeyFromObject(o).String()] = fmt.Sprintf("generation %d %s", hub.GetGeneration(), data)
	}
	return out
}

func storedVersions(t *testing.T, ctx context.Context, crds interface {
	Get(context.Context, string, metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}, name string) []string {
	t.Helper()
	crd, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return crd.Status.StoredVersions
}

// waitForV1beta1Storage waits until the API server stores a new object of each kind as
// v1beta1: it switches storage when its own watch of the CRD tells it, a moment after the
// update returned.
func waitForV1beta1Storage(t *testing.T, ctx context.Context, k client.Client, etcd string) {
	t.Helper()
	if err := k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}); err != nil {
		t.Fatal(err)
	}
	probes := []client.Object{
		&v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "probe", Name: "p"}, Spec: v1alpha1.ValkeyClusterSpec{Topology: v1alpha1.TopologyStandalone, Replicas: 1}},
		&v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "probe", Name: "p"}, Spec: v1alpha1.ValkeyBackupSpec{Cluster: "p"}},
		&v1alpha1.ValkeyACL{ObjectMeta: metav1.ObjectMeta{Namespace: "probe", Name: "p"}, Spec: v1alpha1.ValkeyACLSpec{
			Cluster: "p", User: "p", Rules: []v1alpha1.ACLRule{"+@read"}, PasswordSecrets: []v1alpha1.SecretKeyRef{{Name: "p"}}}},
	}
	for _, p := range probes {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			o := p.DeepCopyObject().(client.Object)
			if err := k.Create(ctx, o); err != nil {
				return false, err
			}
			got, err := etcdkv.StoredAPIVersion(ctx, etcd, group, resourceOf(p), "probe", "p")
			if err != nil {
				return false, err
			}
			if err := k.Delete(ctx, o); err != nil {
				return false, err
			}
			if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
				return apierrors.IsNotFound(k.Get(ctx, client.ObjectKeyFromObject(o), o)), nil
			}); err != nil {
				return false, err
			}
			return got == group+"/v1beta1", nil
		})
		if err != nil {
			t.Fatalf("the API server does not store %s as v1beta1: %v", resourceOf(p), err)
		}
	}
}

// The runner, as the manager runs it on the leader, migrates at its start and again whenever a
// CRD changes while it runs: storedVersions that name an older version again (an upgrade
// that switched the storage version while the operator ran) are brought back to the storage
// version alone without a restart.
func TestTheRunnerMigratesAtStartAndAfterACRDChange(t *testing.T) {
	_, cfg := server.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	mgr, err := manager.New(cfg, manager.Options{Scheme: conversionwebhook.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := storageversion.Add(mgr); err != nil {
		t.Fatal(err)
	}
	// Both versions listed, as an upgrade leaves them, before the runner starts.
	storage := map[string]string{}
	listBoth := func() {
		for _, name := range storageversion.CRDs {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range crd.Spec.Versions {
				if v.Storage {
					storage[name] = v.Name
				}
			}
			crd.Status.StoredVersions = []string{"v1alpha1", "v1beta1"}
			if _, err := crds.UpdateStatus(ctx, crd, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	settled := func(when string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			for _, name := range storageversion.CRDs {
				if got := storedVersions(t, ctx, crds, name); !slices.Equal(got, []string{storage[name]}) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s: storedVersions not the storage version alone: %v", when, err)
		}
	}
	listBoth()
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	settled("at the runner's start")
	listBoth()
	settled("after the CRDs changed under the running runner")
}
