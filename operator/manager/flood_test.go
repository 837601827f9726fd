package manager

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
)

// A label flood: ConfigMaps that carry the cluster label without a ValkeyCluster owning them,
// as anyone who may create ConfigMaps in a watched namespace can make. floodCount of
// floodBytes each is 32 MiB of data in the API server.
const (
	floodCount = 64
	floodBytes = 512 << 10
)

// flood creates the ConfigMaps in a namespace of their own, once per API server.
func flood(tb testing.TB) (client.Client, string) {
	tb.Helper()
	_, cfg := server.Start(tb)
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	const ns = "flood"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		if client.IgnoreAlreadyExists(err) != nil {
			tb.Fatal(err)
		}
		return c, ns // made by an earlier test or benchmark of this process
	}
	data := strings.Repeat("x", floodBytes)
	for i := range floodCount {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("flood-%d", i), Namespace: ns, Labels: map[string]string{kube.LabelCluster: "anything"}},
			Data:       map[string]string{"payload": data},
		}
		if err := c.Create(ctx, cm); err != nil {
			tb.Fatal(err)
		}
	}
	return c, ns
}

// heldByCache is how many bytes of heap a cache of ConfigMaps built with opts still holds once
// it has synced the flood (after a collection, so what decoding needed for a moment is gone).
func heldByCache(tb testing.TB, opts cache.Options) (held uint64, cached int) {
	tb.Helper()
	_, cfg := server.Start(tb)
	opts.Scheme = clientgoscheme.Scheme
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, err := cache.New(cfg, opts)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
		tb.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = c.Start(runCtx); close(done) }()
	defer func() { stop(); <-done }()
	if !c.WaitForCacheSync(ctx) {
		tb.Fatal("the cache did not sync")
	}
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace("flood")); err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(c)
	if after.HeapAlloc < before.HeapAlloc {
		return 0, len(list.Items)
	}
	return after.HeapAlloc - before.HeapAlloc, len(list.Items)
}

// labelOnly is the cache as it was: the label selector alone, every labelled object whole.
func labelOnly() cache.Options {
	ours, err := labels.NewRequirement(kube.LabelCluster, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: labels.NewSelector().Add(*ours)}},
		DefaultTransform: cache.TransformStripManagedFields()}
}

// TestALabelFloodCostsTheOperatorOnlyMetadata, on a real API server: 32 MiB of labelled
// ConfigMaps no ValkeyCluster owns are all in the operator's cache (it must see them to know
// they are in the way), and the cache holds less than a fifth of their size; the cache as it
// was held all of it.
func TestALabelFloodCostsTheOperatorOnlyMetadata(t *testing.T) {
	flood(t)
	held, cached := heldByCache(t, cacheOptions(nil))
	if cached != floodCount {
		t.Fatalf("%d of the %d labelled ConfigMaps cached: the operator must see them", cached, floodCount)
	}
	if limit := uint64(floodCount * floodBytes / 5); held > limit {
		t.Errorf("the cache holds %.1f MiB for %d MiB of strangers' ConfigMaps; want under %.1f MiB", mib(held), floodCount*floodBytes>>20, mib(limit))
	}
	t.Logf("cache holds %.2f MiB for %d MiB of labelled ConfigMaps", mib(held), floodCount*floodBytes>>20)
}

// BenchmarkCacheUnderALabelFlood: what the operator's cache holds for the flood, against the
// cache as it was (label selector only) measured in the same run.
func BenchmarkCacheUnderALabelFlood(b *testing.B) {
	flood(b)
	for range b.N {
		held, _ := heldByCache(b, cacheOptions(nil))
		ref, _ := heldByCache(b, labelOnly())
		b.ReportMetric(mib(held), "MiB-held")
		b.ReportMetric(mib(ref), "MiB-held-label-only")
		if ref > 0 {
			b.ReportMetric(float64(held)/float64(ref), "ratio")
		}
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
