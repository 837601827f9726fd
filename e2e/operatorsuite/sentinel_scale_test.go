package operatorsuite

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
)

// TestSentinelTopologyScalesItsSentinels: spec.sentinel.replicas goes from 3 to 5, then back to
// 3, under a Sentinel-aware client writing with WAIT 1. The sentinels' StatefulSet moves one
// sentinel at a time (read from the API server all along: never two at once); at each end every
// sentinel, asked as an application asks it, names the primary, lists exactly the replicas and
// knows exactly the other sentinels that run (a removed one is no voter any more); nothing is
// failed over, and every acknowledged write reads back.
func TestSentinelTopologyScalesItsSentinels(t *testing.T) {
	ns, steady, pass := steadySentinels(t, "valkey/valkey:8.0")
	ctx := ctxFor(t, 8*time.Minute)
	app := sentinelClient(t, ns, pass)
	w := startSentinelWriter(ctx, app)
	counts := watchSentinelCount(t, ctx, ns, kube.SentinelSetName(valkeyapi.HubOf(steady)))
	seq := len(steady.Status.History)
	vc := steady
	for _, n := range []int{5, 3} {
		patch := fmt.Sprintf(`{"spec":{"sentinel":{"replicas":%d}}}`, n)
		hub := &v1beta1.ValkeyCluster{}
		hub.Namespace, hub.Name = ns, "watched"
		if err := k.Patch(ctx, hub, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		vc = waitFor(t, ns, "watched", 4*time.Minute, fmt.Sprintf("%d sentinels settled", n), func(vc *v1alpha1.ValkeyCluster) bool {
			if !steadyWith(3)(vc) || vc.Status.Waiting != "" {
				return false
			}
			var hub v1beta1.ValkeyCluster
			return k.Get(ctx, client.ObjectKeyFromObject(vc), &hub) == nil && len(hub.Status.Sentinels) == n
		})
		sentinelsKnowExactly(t, ctx, ns, pass, vc, n)
		t.Logf("%d sentinels, each knowing the %d others, %s after the change", n, n-1, time.Since(start).Round(100*time.Millisecond))
	}
	got := counts()
	if !slices.Equal(got, []int{3, 4, 5, 4, 3}) {
		t.Fatalf("the sentinels' StatefulSet asked for %v sentinels in turn, want 3, 4, 5, 4, 3: one at a time", got)
	}
	if vc.Status.Primary != steady.Status.Primary {
		t.Fatalf("the primary moved from %s to %s while the sentinels were scaled", steady.Status.Primary, vc.Status.Primary)
	}
	for _, h := range vc.Status.History[seq:] {
		t.Fatalf("scaling the sentinels made a transition: %+v", h)
	}
	keys, gap := w.stop()
	if len(keys) == 0 {
		t.Fatal("no write was acknowledged while the sentinels were scaled")
	}
	readBack(t, ctx, app, keys, vc)
	t.Logf("%d writes acknowledged by WAIT 1, longest gap %s", len(keys), gap.Round(time.Millisecond))
}

// watchSentinelCount polls the sentinels' StatefulSet until ctx ends or the returned function
// is called, which gives the pod counts it asked for, each change once.
func watchSentinelCount(t *testing.T, ctx context.Context, ns, name string) func() []int {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var seen []int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var sts appsv1.StatefulSet
			if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sts); err == nil && sts.Spec.Replicas != nil {
				n := int(*sts.Spec.Replicas)
				mu.Lock()
				if len(seen) == 0 || seen[len(seen)-1] != n {
					seen = append(seen, n)
				}
				mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() []int {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), seen...)
	}
}
