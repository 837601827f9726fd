package provisioner

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func ctxFor(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(b []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// startProvisioner creates the class and runs a Provisioner with a fresh root until the test
// ends. Cleanups run last-registered first, so the test's claims (registered later) are
// reclaimed while the provisioner still runs.
func startProvisioner(tb testing.TB, cs kubernetes.Interface, class string) *Provisioner {
	tb.Helper()
	p := New(cs, Options{
		Root:         tb.TempDir(),
		StorageClass: class,
		Logger:       slog.New(slog.NewTextHandler(tbWriter{tb}, nil)),
	})
	if err := p.EnsureStorageClass(ctxFor(tb, 30*time.Second)); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			tb.Errorf("Run did not return within 10s of cancel")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cs.StorageV1().StorageClasses().Delete(ctx, class, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			tb.Errorf("deleting storage class: %v", err)
		}
	})
	return p
}

// namespace creates a namespace for one test; its cleanup deletes the test's claims and
// waits until their volumes are gone, so that nothing is left for the next test.
func namespace(tb testing.TB, cs kubernetes.Interface) string {
	tb.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(ctxFor(tb, 30*time.Second), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "prov-"},
	}, metav1.CreateOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		claims, err := cs.CoreV1().PersistentVolumeClaims(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			tb.Errorf("listing claims: %v", err)
			return
		}
		for _, c := range claims.Items {
			if err := cs.CoreV1().PersistentVolumeClaims(ns.Name).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				tb.Errorf("deleting claim %s: %v", c.Name, err)
			}
		}
		for _, c := range claims.Items {
			pv := "pvc-" + string(c.UID)
			if err := poll(ctx, func() (bool, error) {
				_, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			}); err != nil {
				tb.Errorf("volume %s of claim %s not reclaimed: %v", pv, c.Name, err)
			}
		}
		_ = cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// createClaim creates a ReadWriteOnce claim; class "" leaves the class to the API server's
// DefaultStorageClass admission.
func createClaim(tb testing.TB, cs kubernetes.Interface, ns, name, class, size string, mut ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	tb.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			},
		},
	}
	if class != "" {
		pvc.Spec.StorageClassName = &class
	}
	for _, m := range mut {
		m(pvc)
	}
	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctxFor(tb, 30*time.Second), pvc, metav1.CreateOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return pvc
}

// waitClaim polls a claim until cond holds (30 s at most: the binder and the provisioner
// react to watch events, so it is normally well under a second).
func waitClaim(tb testing.TB, cs kubernetes.Interface, ns, name, what string, cond func(*corev1.PersistentVolumeClaim) bool) *corev1.PersistentVolumeClaim {
	tb.Helper()
	ctx := ctxFor(tb, 30*time.Second)
	var last *corev1.PersistentVolumeClaim
	start := time.Now()
	err := poll(ctx, func() (bool, error) {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = pvc
		return cond(pvc), nil
	})
	if err != nil {
		tb.Fatalf("claim %s/%s %s: %v; last seen: phase %s, volume %q, capacity %v, annotations %v",
			ns, name, what, err, last.Status.Phase, last.Spec.VolumeName, last.Status.Capacity, last.Annotations)
	}
	tb.Logf("claim %s/%s %s after %v", ns, name, what, time.Since(start).Round(time.Millisecond))
	return last
}

func bound(pvc *corev1.PersistentVolumeClaim) bool {
	return pvc.Status.Phase == corev1.ClaimBound
}

// poll calls cond every 50 ms until it is true, fails, or ctx ends.
func poll(ctx context.Context, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
