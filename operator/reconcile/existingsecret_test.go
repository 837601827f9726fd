package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestANewClusterSaysItsExistingSecretIsUnusable: a new cluster whose spec.auth.existingSecret
// is missing, or lacks the key, waits with the reason (and what to create or change) in
// status.waiting and on Ready=False, where kubectl valkey status and kubectl wait look, not
// only in an Event; the turn ends without an error back-off and creates no pod. Before, the
// reason reached only an Event, and status and Ready stayed silent.
func TestANewClusterSaysItsExistingSecretIsUnusable(t *testing.T) {
	c := apiClient(t)
	ctx := context.Background()
	ns := newNamespace(t, c, "existing-secret-")
	now := time.Now()
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{Client: c, APIReader: c, Recorder: rec, Metrics: NewMetrics(prometheus.NewRegistry()), Now: func() time.Time { return now }}
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c"},
		Spec: v1alpha1.ValkeyClusterSpec{Auth: v1alpha1.AuthSpec{ExistingSecret: &v1alpha1.SecretKeyReference{Name: "app-password"}}}}
	if err := c.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns.Name, Name: "c"}}

	turn := func(step string, want ...string) {
		t.Helper()
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Errorf("%s: the turn failed (%v); want it to wait, with the reason in status", step, err)
		} else if res.RequeueAfter <= 0 {
			t.Errorf("%s: no requeue (%+v): a Secret created later must be seen", step, res)
		}
		var got v1alpha1.ValkeyCluster
		if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
			t.Fatal(err)
		}
		ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		for _, w := range want {
			if !strings.Contains(got.Status.Waiting, w) {
				t.Errorf("%s: status.waiting %q does not say %q", step, got.Status.Waiting, w)
			}
			if ready == nil || ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, w) {
				t.Errorf("%s: Ready %+v does not say %q", step, ready, w)
			}
		}
		var warned bool
		for len(rec.Events) > 0 {
			e := <-rec.Events
			warned = warned || (strings.Contains(e, "AuthFailed") && strings.Contains(e, want[0]))
		}
		if !warned {
			t.Errorf("%s: no AuthFailed Event saying %q", step, want[0])
		}
	}
	turn("no Secret", "Secret "+ns.Name+"/app-password does not exist", "kubectl create secret generic app-password", `key "password"`)

	// The Secret, with the password under another key than the one named.
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "app-password"}, Data: map[string][]byte{"pw": []byte("s3cret")}}
	if err := c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	turn("key missing", `no password under key "password"`, "spec.auth.existingSecret.key")

	// Nothing ran meanwhile: no StatefulSet, so no pod.
	var sts appsv1.StatefulSet
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: kube.NamesOf(vc).ShardSet(0)}, &sts); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet of a cluster waiting for its existing Secret: %v, want none", err)
	}
}
