package operatorsuite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
// knows exactly the other sentinels that run (a removed one is no voter any more). Then the
// sentinels' template changes (their resources): every sentinel pod is made again from it, and
// the pods the API server lists never have more than one sentinel not ready at once; each
// sentinel comes back as the voter it was (the others count exactly two others, not a new id
// beside the old). Nothing is failed over, and every acknowledged write reads back.
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
	vc = sentinelsRolled(t, ctx, ns, pass, vc)
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

// sentinelsRolled changes the sentinels' template of a Steady cluster with three sentinels and
// waits until every sentinel pod was made again from it: one at a time (the pods listed never
// show two sentinels not ready), each back as the voter it was.
func sentinelsRolled(t *testing.T, ctx context.Context, ns, pass string, vc *v1alpha1.ValkeyCluster) *v1alpha1.ValkeyCluster {
	t.Helper()
	selector := kube.SentinelSelectorLabels(valkeyapi.HubOf(vc))
	before := map[string]types.UID{}
	var pods corev1.PodList
	if err := k.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(selector)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		before[p.Name] = p.UID
	}
	down := watchSentinelsDown(t, ctx, ns, selector, 3)
	hub := &v1beta1.ValkeyCluster{}
	hub.Namespace, hub.Name = ns, "watched"
	patch := `{"spec":{"sentinel":{"resources":{"requests":{"cpu":"11m"}}}}}`
	if err := k.Patch(ctx, hub, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rolled := waitFor(t, ns, "watched", 4*time.Minute, "every sentinel pod made again from the new template", func(vc *v1alpha1.ValkeyCluster) bool {
		if !steadyWith(3)(vc) || vc.Status.Waiting != "" {
			return false
		}
		var sts appsv1.StatefulSet
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: kube.SentinelSetName(valkeyapi.HubOf(vc))}, &sts); err != nil {
			return false
		}
		var pods corev1.PodList
		if err := k.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(selector)); err != nil || len(pods.Items) != 3 {
			return false
		}
		for _, p := range pods.Items {
			if p.UID == before[p.Name] || p.DeletionTimestamp != nil || p.Annotations[kube.AnnotationRevision] != sts.Spec.Template.Annotations[kube.AnnotationRevision] ||
				p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 11 {
				return false
			}
		}
		return true
	})
	if worst, pods := down(); worst > 1 {
		t.Fatalf("%d sentinels were not ready at once while their template rolled, want one at a time: %s", worst, pods)
	}
	sentinelsKnowExactly(t, ctx, ns, pass, rolled, 3)
	t.Logf("3 sentinels made again from the new template one at a time, %s after the change", time.Since(start).Round(100*time.Millisecond))
	return rolled
}

// watchSentinelsDown polls the sentinel pods the API server lists until ctx ends or the
// returned function is called, which gives the most of want sentinels seen not ready at once
// (a pod missing, being deleted, or without its Ready condition) and what the pods were then.
func watchSentinelsDown(t *testing.T, ctx context.Context, ns string, selector map[string]string, want int) func() (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	worst, seen := 0, ""
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var pods corev1.PodList
			if err := k.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(selector)); err == nil {
				ready, states := 0, []string{}
				for _, p := range pods.Items {
					up := p.DeletionTimestamp == nil && podReady(&p)
					if up {
						ready++
					}
					states = append(states, fmt.Sprintf("%s (%s, deleting %t, ready %t)", p.Name, p.Status.Phase, p.DeletionTimestamp != nil, up))
				}
				mu.Lock()
				if want-ready > worst {
					worst, seen = want-ready, strings.Join(states, ", ")
				}
				mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() (int, string) {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return worst, seen
	}
}
