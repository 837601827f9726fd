package cluster

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
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
)

// TestANewClusterSaysItsExistingSecretIsUnusable: a new cluster whose spec.auth.passwordSecretRef
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
	r := &Reconciler{Client: c, APIReader: c, Recorder: rec, Metrics: shared.NewMetrics(prometheus.NewRegistry()), Now: func() time.Time { return now }}
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c"},
		Spec: v1beta1.ValkeyClusterSpec{Auth: v1beta1.AuthSpec{PasswordSecretRef: &v1beta1.SecretKeyRef{Name: "app-password"}}}}
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
		var got v1beta1.ValkeyCluster
		if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
			t.Fatal(err)
		}
		ready := meta.FindStatusCondition(got.Status.Conditions, v1beta1.ConditionReady)
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
	turn("key missing", `no password under key "password"`, "spec.auth.passwordSecretRef.key")

	// Nothing ran meanwhile: no StatefulSet, so no pod.
	var sts appsv1.StatefulSet
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: kube.NamesOf(vc).ShardSet(0)}, &sts); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet of a cluster waiting for its existing Secret: %v, want none", err)
	}
}

// TestARunningClusterKeepsItsPasswordWhenItsExistingSecretGoes: once a cluster runs with the
// password of spec.auth.passwordSecretRef, deleting that Secret does not stop its turns (a turn
// that stops also stops failovers): the application password the nodes check stays in the
// auth Secret, and status.waiting and an AuthFailed Event say what is missing. Before, every
// turn ended at the missing Secret until it was back.
func TestARunningClusterKeepsItsPasswordWhenItsExistingSecretGoes(t *testing.T) {
	c := apiClient(t)
	ctx := context.Background()
	ns := newNamespace(t, c, "existing-secret-gone-")
	now := time.Now()
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{Client: c, APIReader: c, Recorder: rec, Metrics: shared.NewMetrics(prometheus.NewRegistry()), Now: func() time.Time { return now }}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "app-password"}, Data: map[string][]byte{"password": []byte("s3cret")}}
	if err := c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c"},
		Spec: v1beta1.ValkeyClusterSpec{Auth: v1beta1.AuthSpec{PasswordSecretRef: &v1beta1.SecretKeyRef{Name: "app-password"}}}}
	if err := c.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns.Name, Name: "c"}}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	auth := func() string {
		var a corev1.Secret
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: kube.NamesOf(vc).Auth}, &a); err != nil {
			t.Fatal(err)
		}
		return string(a.Data[kube.KeyClientPassword])
	}
	if got := auth(); got != "s3cret" {
		t.Fatalf("the auth Secret holds %q, want the existing Secret's password", got)
	}
	for len(rec.Events) > 0 {
		<-rec.Events
	}
	if err := c.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatalf("the turn failed once the existing Secret was gone: %v", err)
	}
	var got v1beta1.ValkeyCluster
	if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	const want = "Secret "
	if !strings.Contains(got.Status.Waiting, "app-password does not exist") || !strings.Contains(got.Status.Waiting, "keeps the application password it runs with") {
		t.Errorf("status.waiting %q does not say the Secret is gone and the password is kept", got.Status.Waiting)
	}
	// The machine decided this turn: its bootstrap's wait (no pod runs here) follows.
	if !strings.Contains(got.Status.Waiting, "shard 0: no node answers yet") {
		t.Errorf("status.waiting %q: the turn stopped before the machine decided", got.Status.Waiting)
	}
	if got := auth(); got != "s3cret" {
		t.Errorf("the auth Secret's application password became %q", got)
	}
	var warned bool
	for len(rec.Events) > 0 {
		e := <-rec.Events
		warned = warned || (strings.Contains(e, "AuthFailed") && strings.Contains(e, want+ns.Name+"/app-password does not exist"))
	}
	if !warned {
		t.Error("no AuthFailed Event saying the existing Secret is gone")
	}
}
