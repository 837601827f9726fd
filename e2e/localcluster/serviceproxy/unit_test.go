package serviceproxy

import (
	"net/netip"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// These tests cover decisions that the API server would not let an integration test reach
// (a ClusterIP outside the loopback range) or that must be checked without dialing anything
// (a Pod claiming a non-loopback IP).

func TestClusterIPAcceptsOnlyLoopback(t *testing.T) {
	for _, tc := range []struct {
		ip      string
		ok, err bool
	}{
		{"127.250.0.10", true, false},
		{"", false, false},
		{"None", false, false},
		{"10.0.0.1", false, true},
		{"192.168.1.1", false, true},
		{"::1", false, true},
		{"not-an-ip", false, true},
	} {
		_, ok, err := clusterIP(&corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: tc.ip}})
		if ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("clusterIP(%q) = ok %v, err %v; want ok %v, error %v", tc.ip, ok, err, tc.ok, tc.err)
		}
	}
}

func TestPickUsesOnlyEligibleLoopbackPods(t *testing.T) {
	now := metav1.Now()
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	notReady := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	pod := func(name, ip string, conds []corev1.PodCondition, mut func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "x"}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: conds},
		}
		if mut != nil {
			mut(p)
		}
		return p
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []*corev1.Pod{
		pod("good", "127.250.1.1", ready, nil),
		pod("private", "10.244.0.5", ready, nil),
		pod("no-ip", "", ready, nil),
		pod("not-ready", "127.250.1.2", notReady, nil),
		pod("terminating", "127.250.1.3", ready, func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
		pod("failed", "127.250.1.4", ready, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		pod("other-ns", "127.250.1.5", ready, func(p *corev1.Pod) { p.Namespace = "other" }),
		pod("other-labels", "127.250.1.6", ready, func(p *corev1.Pod) { p.Labels = nil }),
	} {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	p := New(nil, Options{})
	p.pods = corelisters.NewPodLister(indexer)
	r := &route{service: "ns/x", namespace: "ns", port: 80, targetPort: intstr.FromInt32(7000),
		selector: labels.SelectorFromSet(map[string]string{"app": "x"})}
	var next atomic.Uint64
	for range 5 {
		got, ok := p.pick(r, &next)
		if !ok || got.String() != "127.250.1.1:7000" {
			t.Fatalf("pick = %v, %v; want only the good pod at 127.250.1.1:7000", got, ok)
		}
	}

	// A Pod event (the informer's handler advances the generation) is seen by the next pick:
	// the not-ready Pod turned ready joins, and leaves again when it is not ready any more.
	for _, conds := range [][]corev1.PodCondition{ready, notReady} {
		if err := indexer.Update(pod("not-ready", "127.250.1.2", conds, nil)); err != nil {
			t.Fatal(err)
		}
		r.gen.Add(1) // what podChanged does for a route that selects the Pod
		seen := map[string]bool{}
		for range 4 {
			got, _ := p.pick(r, &next)
			seen[got.String()] = true
		}
		if want := len(conds) == 1 && conds[0].Status == corev1.ConditionTrue; seen["127.250.1.2:7000"] != want {
			t.Fatalf("after the Pod became %v: picked %v", conds[0].Status, seen)
		}
	}

	// Publishing not-ready addresses (a Service change: sync swaps in a new route) admits the
	// not-ready Pod, and still nothing else.
	r = &route{service: "ns/x", namespace: "ns", port: 80, targetPort: intstr.FromInt32(7000),
		selector: labels.SelectorFromSet(map[string]string{"app": "x"}), publishNotReady: true}
	seen := map[string]bool{}
	for range 4 {
		got, _ := p.pick(r, &next)
		seen[got.String()] = true
	}
	if len(seen) != 2 || !seen["127.250.1.1:7000"] || !seen["127.250.1.2:7000"] {
		t.Fatalf("with publishNotReadyAddresses: picked %v", seen)
	}

	// No selector and no static backend: nobody.
	if got, ok := p.pick(&route{namespace: "ns"}, &next); ok {
		t.Fatalf("selector-less route picked %v", got)
	}
}

func TestNewIgnoresNonLoopbackStatic(t *testing.T) {
	p := New(nil, Options{Static: map[string]string{
		"default/kubernetes": "127.0.0.1:6443",
		"default/far":        "10.0.0.1:443",
		"default/name":       "localhost:443",
	}})
	if len(p.static) != 1 || p.static["default/kubernetes"].String() != "127.0.0.1:6443" {
		t.Fatalf("static backends = %v; want only default/kubernetes", p.static)
	}
}

// A Pod event advances the generation of exactly the routes whose selector matches the Pod
// before or after the change, so only their memoised backends are listed again.
func TestPodChangedAdvancesOnlyTheRoutesThatSelectThePod(t *testing.T) {
	p := New(nil, Options{})
	mk := func(ns string, sel map[string]string) *route {
		r := &route{namespace: ns}
		if sel != nil {
			r.selector = labels.SelectorFromSet(sel)
		}
		l := &listener{}
		l.route.Store(r)
		p.listeners[netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(len(p.listeners) + 1)}), 80)] = l
		return r
	}
	x, y, other, none := mk("ns", map[string]string{"app": "x"}), mk("ns", map[string]string{"app": "y"}), mk("other", map[string]string{"app": "x"}), mk("ns", nil)
	pod := func(app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"app": app}}}
	}
	p.podChanged(pod("x"))
	p.podChanged(pod("x"), pod("y")) // relabelled: both routes see it
	p.podChanged(nil)
	for _, c := range []struct {
		name string
		r    *route
		want uint64
	}{{"app=x", x, 2}, {"app=y", y, 1}, {"other namespace", other, 0}, {"no selector", none, 0}} {
		if got := c.r.gen.Load(); got != c.want {
			t.Errorf("%s: generation %d, want %d", c.name, got, c.want)
		}
	}
}
