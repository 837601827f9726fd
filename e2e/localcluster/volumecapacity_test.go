package localcluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The storage class provisions from a node's disk of the default 100Gi, not from what this
// machine's disk has free: a claim of 90Gi binds (far more than a CI machine keeps free, and
// the directory takes only what is written), one of 200Gi stays Pending with an event naming
// the 100Gi.
func TestVolumesAreBoundedByTheNodesDiskNotTheMachinesFreeSpace(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 2*time.Minute)
	claims := cl.Clientset().CoreV1().PersistentVolumeClaims(ns)
	claim := func(name, size string) {
		t.Helper()
		_, err := claims.Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	claim("fits", "90Gi")
	claim("too-big", "200Gi")

	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := claims.Get(ctx, "fits", metav1.GetOptions{})
		return err == nil && c.Status.Phase == corev1.ClaimBound, nil
	})
	if err != nil {
		events, _ := cl.Clientset().CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		t.Fatalf("a 90Gi claim is not bound: %v; events: %v", err, eventMessages(events))
	}
	const want = "insufficient capacity: the claim asks for 200Gi, the storage has 100Gi"
	var last []string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		events, err := cl.Clientset().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=too-big"})
		if err != nil {
			return false, nil
		}
		last = eventMessages(events)
		return strings.Contains(strings.Join(last, "\n"), want), nil
	})
	if err != nil {
		t.Fatalf("no event %q on the 200Gi claim; its events: %q", want, last)
	}
	if c, err := claims.Get(ctx, "too-big", metav1.GetOptions{}); err != nil || c.Status.Phase != corev1.ClaimPending {
		t.Fatalf("the 200Gi claim: %v, err %v; want Pending", c.Status.Phase, err)
	}
}

func eventMessages(events *corev1.EventList) []string {
	var out []string
	for _, e := range events.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}
