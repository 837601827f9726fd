package admission_test

import (
	"context"
	"net"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

const finalizer = "valkey.fsm.dev/test-finalizer"

// With the chart's webhooks and nothing answering them (failurePolicy Fail, the default),
// creates and updates of users are refused; deletes, status writes, the operator's own writes
// and a finalizer's removal from an object being deleted still go through.
func TestADownWebhookBlocksNeitherDeletionNorStatus(t *testing.T) {
	c, ns, _ := admin(t)
	ctx := context.Background()
	operator := userClient(t, operatorUser, "system:masters")
	// Made while the webhooks answer, each with a finalizer as the operator adds it.
	for _, name := range []string{"kept", "removed-by-operator", "removed-by-user"} {
		if err := c.Create(ctx, &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
		if err := patchFinalizers(ctx, operator, ns, name, []string{finalizer}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create(ctx, &v1beta1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns}, Spec: v1beta1.ValkeyBackupSpec{Cluster: "kept"}}); err != nil {
		t.Fatal(err)
	}

	// Nothing listens at this address, as at a pod's that is gone: connections are refused.
	// (A listener that accepts and closes would cost seconds a request: the API server
	// retries a reset connection.)
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := gone.Addr().String()
	_ = gone.Close()
	mutating, validating, err := chartWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	only := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	for _, m := range mutating {
		m.Name = "down-" + ns
		for i := range m.Webhooks {
			pointAt(&m.Webhooks[i].ClientConfig, "https://"+down, nil)
			m.Webhooks[i].NamespaceSelector = only
		}
		create(t, c, m)
	}
	for _, v := range validating {
		v.Name = "down-" + ns
		for i := range v.Webhooks {
			pointAt(&v.Webhooks[i].ClientConfig, "https://"+down, nil)
			v.Webhooks[i].NamespaceSelector = only
		}
		create(t, c, v)
	}
	if err := waitRefused(ctx, c, ns, "failed calling webhook"); err != nil {
		t.Fatal(err)
	}

	// What a down webhook blocks: a user's creates and updates.
	refused(t, "a create while the webhook is down", c.Create(ctx, &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: ns}}),
		"failed calling webhook")
	var kept v1beta1.ValkeyCluster
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kept"}, &kept); err != nil {
		t.Fatal(err)
	}
	scaled := kept.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](2)
	refused(t, "a user's update while the webhook is down", c.Update(ctx, scaled), "failed calling webhook")

	// What it never blocks: status, the operator's writes, updates of a backup, deletion.
	kept.Status.State = v1beta1.StateSteady
	if err := c.Status().Update(ctx, &kept); err != nil {
		t.Errorf("a status update while the webhook is down: %v", err)
	}
	if err := patchFinalizers(ctx, operator, ns, "kept", []string{finalizer, finalizer + "-2"}); err != nil {
		t.Errorf("the operator's update while the webhook is down: %v", err)
	}
	var b v1beta1.ValkeyBackup
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b"}, &b); err != nil {
		t.Fatal(err)
	}
	b.Labels = map[string]string{"kept": "yes"}
	if err := c.Update(ctx, &b); err != nil {
		t.Errorf("a label on a backup while the webhook is down: %v", err)
	}
	for _, tc := range []struct {
		name string
		by   client.Client
	}{{"removed-by-operator", operator}, {"removed-by-user", c}} {
		if err := c.Delete(ctx, &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns}}); err != nil {
			t.Errorf("deleting %s while the webhook is down: %v", tc.name, err)
			continue
		}
		if err := patchFinalizers(ctx, tc.by, ns, tc.name, nil); err != nil {
			t.Errorf("removing the finalizer of %s, being deleted, while the webhook is down: %v", tc.name, err)
			continue
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.name}, &v1beta1.ValkeyCluster{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s after its finalizer's removal: %v, want it gone", tc.name, err)
		}
	}
}

// patchFinalizers sets a cluster's finalizers with a merge patch, as the operator does.
func patchFinalizers(ctx context.Context, c client.Client, ns, name string, finalizers []string) error {
	var vc v1beta1.ValkeyCluster
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vc); err != nil {
		return err
	}
	patch := client.MergeFrom(vc.DeepCopy())
	vc.Finalizers = finalizers
	return c.Patch(ctx, &vc, patch)
}

// create creates a cluster-wide object and deletes it when the test ends.
func create(t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Delete(ctx, o)
	})
}
