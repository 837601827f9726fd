package provisioner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestEnsureStorageClass(t *testing.T) {
	cs := cluster(t)
	ctx := ctxFor(t, 30*time.Second)
	p := New(cs, Options{Root: t.TempDir(), StorageClass: "ensure"})
	t.Cleanup(func() { _ = cs.StorageV1().StorageClasses().Delete(ctx, "ensure", metav1.DeleteOptions{}) })
	for i := range 2 { // the second call finds the class and accepts it
		if err := p.EnsureStorageClass(ctx); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	sc, err := cs.StorageV1().StorageClasses().Get(ctx, "ensure", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" {
		t.Errorf("not the default class: annotations %v", sc.Annotations)
	}
	if sc.Provisioner != DefaultProvisioner {
		t.Errorf("provisioner %q, want %q", sc.Provisioner, DefaultProvisioner)
	}
	if sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
		t.Error("volume expansion not allowed")
	}
	if sc.ReclaimPolicy == nil || *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("reclaim policy %v, want Delete", sc.ReclaimPolicy)
	}
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("binding mode %v, want Immediate", sc.VolumeBindingMode)
	}

	// A class of the same name that belongs to another provisioner is not ours to take.
	other := New(cs, Options{Root: t.TempDir(), StorageClass: "ensure", Provisioner: "example.com/other"})
	if err := other.EnsureStorageClass(ctx); err == nil {
		t.Error("EnsureStorageClass accepted a class of another provisioner")
	}
}

func TestProvisionsAndBindsDefaultClassClaim(t *testing.T) {
	cs := cluster(t)
	p := startProvisioner(t, cs, "standard")
	ns := namespace(t, cs)
	// No class named: the API server's DefaultStorageClass admission picks ours.
	pvc := createClaim(t, cs, ns, "data", "", "1Mi")
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "standard" {
		t.Fatalf("claim got class %v, want the default class standard", pvc.Spec.StorageClassName)
	}
	pvc = waitClaim(t, cs, ns, "data", "bound", bound)

	pv, err := cs.CoreV1().PersistentVolumes().Get(ctxFor(t, 10*time.Second), pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Name != "pvc-"+string(pvc.UID) {
		t.Errorf("PV %s, want pvc-<claim UID>", pv.Name)
	}
	path, ok := PathOf(pv)
	if want := filepath.Join(p.opts.Root, pv.Name); !ok || path != want {
		t.Errorf("PathOf = %q, %v; want %q", path, ok, want)
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o777 {
		t.Errorf("volume directory %s: %v, %v", path, fi, err)
	}
	if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.Cmp(resource.MustParse("1Mi")) != 0 {
		t.Errorf("PV capacity %s, want 1Mi", got.String())
	}
	if got := pvc.Status.Capacity[corev1.ResourceStorage]; got.Cmp(resource.MustParse("1Mi")) != 0 {
		t.Errorf("claim capacity %s, want 1Mi", got.String())
	}
	if len(pv.Spec.AccessModes) != 1 || pv.Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Errorf("PV access modes %v, want the claim's [ReadWriteOnce]", pv.Spec.AccessModes)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != pvc.UID || ref.Namespace != ns || ref.Name != "data" {
		t.Errorf("PV claimRef %+v does not name the claim", ref)
	}
	if pv.Annotations["pv.kubernetes.io/provisioned-by"] != DefaultProvisioner {
		t.Errorf("PV annotations %v lack provisioned-by %s", pv.Annotations, DefaultProvisioner)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.StorageClassName != "standard" {
		t.Errorf("PV reclaim %s, class %s; want Delete, standard", pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.StorageClassName)
	}
	// The binder, not this package, completed the binding.
	if pvc.Annotations["pv.kubernetes.io/bind-completed"] != "yes" {
		t.Errorf("claim annotations %v: the binder did not complete the binding", pvc.Annotations)
	}
}

func TestExpansionUpdatesCapacity(t *testing.T) {
	cs := cluster(t)
	startProvisioner(t, cs, "expand")
	ns := namespace(t, cs)
	createClaim(t, cs, ns, "data", "expand", "1Mi")
	pvc := waitClaim(t, cs, ns, "data", "bound", bound)

	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"3Mi"}}}}`)
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Patch(ctxFor(t, 10*time.Second), "data", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want := resource.MustParse("3Mi")
	waitClaim(t, cs, ns, "data", "expanded to 3Mi", func(c *corev1.PersistentVolumeClaim) bool {
		got := c.Status.Capacity[corev1.ResourceStorage]
		return got.Cmp(want) == 0
	})
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctxFor(t, 10*time.Second), pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.Cmp(want) != 0 {
		t.Errorf("PV capacity %s after expansion, want 3Mi", got.String())
	}
}

func TestDeletingClaimRemovesVolumeAndDirectory(t *testing.T) {
	cs := cluster(t)
	startProvisioner(t, cs, "reclaim")
	ns := namespace(t, cs)
	createClaim(t, cs, ns, "data", "reclaim", "1Mi")
	pvc := waitClaim(t, cs, ns, "data", "bound", bound)
	ctx := ctxFor(t, 30*time.Second)
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := PathOf(pv)
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}

	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = poll(ctx, func() (bool, error) {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("PV %s not deleted: %v", pv.Name, err)
	}
	t.Logf("PV deleted %v after the claim", time.Since(start).Round(time.Millisecond))
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("volume directory %s still there after its PV was deleted: %v", dir, err)
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("claim still there: %v", err)
	}
}

func TestUnsupportedClaimsStayPending(t *testing.T) {
	cs := cluster(t)
	startProvisioner(t, cs, "unsupported")
	ns := namespace(t, cs)
	block := corev1.PersistentVolumeBlock
	odd := []*corev1.PersistentVolumeClaim{
		createClaim(t, cs, ns, "selector", "unsupported", "1Mi", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"disk": "fast"}}
		}),
		createClaim(t, cs, ns, "block", "unsupported", "1Mi", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.VolumeMode = &block
		}),
	}
	// Created after the odd claims: once the provisioner's single worker got to this one, it
	// has handled the others, so the check below is not a race against it.
	createClaim(t, cs, ns, "plain", "unsupported", "1Mi")
	waitClaim(t, cs, ns, "plain", "bound", bound)

	for _, c := range odd {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctxFor(t, 10*time.Second), "pvc-"+string(c.UID), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("claim %s: want no PV, got %v", c.Name, err)
		}
	}
}

func TestPathOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		pv   *corev1.PersistentVolume
		path string
		ok   bool
	}{
		{"nil", nil, "", false},
		{"hostPath", &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: "/v/pvc-1"}}}}, "/v/pvc-1", true},
		{"local", &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"}}}}, "/mnt/disk", true},
		{"nfs", &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/export"}}}}, "", false},
	} {
		if path, ok := PathOf(tc.pv); path != tc.path || ok != tc.ok {
			t.Errorf("%s: PathOf = %q, %v; want %q, %v", tc.name, path, ok, tc.path, tc.ok)
		}
	}
}

// A claim larger than the storage stays Pending, with the external provisioner's
// ProvisioningFailed event, and no volume; one that fits beside it binds. Growing a bound claim
// past the storage fails the same way and keeps its size.
func TestAClaimLargerThanTheStorageStaysPending(t *testing.T) {
	cs := cluster(t)
	startProvisioner(t, cs, "standard")
	ns := namespace(t, cs)
	ctx := ctxFor(t, 30*time.Second)
	huge := createClaim(t, cs, ns, "huge", "", "1Ei")
	createClaim(t, cs, ns, "small", "", "1Mi")
	waitClaim(t, cs, ns, "small", "bound", bound)
	var failed *corev1.Event
	err := poll(ctx, func() (bool, error) {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=huge"})
		if err != nil {
			return false, err
		}
		for i, e := range evs.Items {
			if e.Reason == "ProvisioningFailed" {
				failed = &evs.Items[i]
			}
		}
		return failed != nil, nil
	})
	if err != nil {
		t.Fatalf("no ProvisioningFailed event for a claim of 1Ei: %v", err)
	}
	want := `failed to provision volume with StorageClass "standard": insufficient capacity: the claim asks for 1Ei, the storage has `
	if failed.Type != corev1.EventTypeWarning || !strings.HasPrefix(failed.Message, want) || failed.InvolvedObject.UID != huge.UID {
		t.Errorf("event %s %q on %s, want a Warning saying %q", failed.Type, failed.Message, failed.InvolvedObject.UID, want)
	}
	cur, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "huge", metav1.GetOptions{})
	if err != nil || cur.Status.Phase != corev1.ClaimPending || cur.Spec.VolumeName != "" {
		t.Fatalf("the 1Ei claim: %v %+v", err, cur.Status)
	}
	if _, err := cs.CoreV1().PersistentVolumes().Get(ctx, "pvc-"+string(huge.UID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a volume was made for the 1Ei claim: %v", err)
	}

	// Growing the small claim past the storage: the resizer's failure, the size stays.
	small, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "small", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	small.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("1Ei")
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Update(ctx, small, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = poll(ctx, func() (bool, error) {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=small"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "VolumeResizeFailed" && strings.Contains(e.Message, "insufficient capacity") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no VolumeResizeFailed event: %v", err)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, "pvc-"+string(small.UID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.Cmp(resource.MustParse("1Mi")) != 0 {
		t.Errorf("the volume grew to %s", got.String())
	}
}
