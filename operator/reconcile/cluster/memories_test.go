package cluster

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/users"
)

// Every field of the Reconciler that remembers clusters is one of its memories: finalize
// forgets a deleted cluster through that list alone, so a memory added to the Reconciler and
// not to the list would keep every deleted cluster for as long as the operator runs.
func TestEveryPerClusterMemoryIsForgottenInOnePlace(t *testing.T) {
	r := &Reconciler{}
	r.defaults()
	listed := map[uintptr]bool{}
	for _, m := range r.memories() {
		listed[reflect.ValueOf(m).Pointer()] = true
	}
	kind := reflect.TypeFor[memory]()
	v := reflect.ValueOf(r).Elem()
	found := 0
	for i := 0; i < v.NumField(); i++ {
		f, field := v.Type().Field(i), v.Field(i)
		var at uintptr
		switch {
		case f.Type.Kind() == reflect.Pointer && f.Type.Implements(kind):
			at = field.Pointer()
		case reflect.PointerTo(f.Type).Implements(kind):
			at = field.Addr().Pointer()
		default:
			continue
		}
		found++
		if !listed[at] {
			t.Errorf("Reconciler.%s remembers clusters but is not in memories(): a deleted cluster would stay in it", f.Name)
		}
	}
	if found != len(r.memories()) {
		t.Errorf("%d fields remember clusters, memories() lists %d", found, len(r.memories()))
	}
}

// A deleted cluster leaves nothing behind: each memory, given something of the cluster the
// way a turn gives it, holds nothing of it once finalize ran (and another cluster's stays).
func TestADeletedClusterLeavesNothingBehind(t *testing.T) {
	c := apiClient(t)
	ctx := context.Background()
	ns := newNamespace(t, c, "forget-")
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "gone", Finalizers: []string{Finalizer}}}
	if err := c.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(100), Metrics: shared.NewMetrics(prometheus.NewRegistry())}
	r.defaults()
	t.Cleanup(r.prober.stopAll)
	now := time.Now()
	const other = types.UID("another-cluster")
	for _, uid := range []types.UID{vc.UID, other} {
		pool := r.pools.get(uid, "operator-password")
		r.passwords.set(uid, valkey.Passwords{Operator: "operator-password"})
		r.probes.count(uid, "gone-0", false)
		r.prober.track(&v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: string(uid), UID: uid}}, &world{pool: pool, interval: time.Hour}, true)
		r.acted.set(uid, "", now)
		r.answered.set(uid, "gone-0", "container")
		r.live.set(uid, "gone-0", liveAttempt{key: "run/hash"})
		r.looks.set(uid, shared.Look{At: now})
		r.restores.want(uid, restoreCheck{id: "restore", gen: 1}, now)
		r.refusedLoads.record(uid, "restore", 1, errors.New("refused"))
		r.users.Apply(ctx, users.Turn{Cluster: &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: string(uid), UID: uid}}, Pool: pool})
		r.tls.mu.Lock()
		if r.tls.m == nil {
			r.tls.m = map[types.UID]tlsRead{}
		}
		r.tls.m[uid] = tlsRead{secret: "tls", at: now}
		r.tls.mu.Unlock()
		r.finalWaits.set(uid, "the final backup")
	}
	names := memoryNames(r)
	for i, m := range r.memories() {
		if !m.Remembers(vc.UID) {
			t.Fatalf("%s: the test gave it nothing of the cluster", names[i])
		}
	}
	if err := r.finalize(ctx, vc); err != nil {
		t.Fatal(err)
	}
	for i, m := range r.memories() {
		if m.Remembers(vc.UID) {
			t.Errorf("%s still remembers the deleted cluster", names[i])
		}
		if !m.Remembers(other) {
			t.Errorf("%s forgot another cluster with it", names[i])
		}
	}
}

// memoryNames names r's memories by the Reconciler's fields, for messages.
func memoryNames(r *Reconciler) []string {
	byAddr := map[uintptr]string{}
	v := reflect.ValueOf(r).Elem()
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).Kind() == reflect.Pointer {
			byAddr[v.Field(i).Pointer()] = v.Type().Field(i).Name
		}
		byAddr[v.Field(i).Addr().Pointer()] = v.Type().Field(i).Name
	}
	var out []string
	for _, m := range r.memories() {
		out = append(out, byAddr[reflect.ValueOf(m).Pointer()])
	}
	return out
}
