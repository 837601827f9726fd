package operatorsuite

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// BenchmarkUnrelatedObjects measures what the rest of a shared cluster costs the operator:
// its resident memory with one ValkeyCluster, then after 1000 Secrets (4 KiB each) and 1000
// Pods that are not its own appear (the Pods never start: no node matches them). The operator
// caches only objects with its labels, so the ratio should stay near 1; before the filter,
// every Secret and Pod of the cluster was listed, watched and held.
func BenchmarkUnrelatedObjects(b *testing.B) {
	if cl == nil {
		b.Skip("no local cluster")
	}
	const n = 1000
	for i := 0; i < b.N; i++ {
		_, opPID := installBenchOperator(b)
		ns := benchNamespace(b)
		if err := k.Create(context.Background(), newCluster(ns, "one", v1alpha1.TopologyStandalone, 1)); err != nil {
			b.Fatal(err)
		}
		pollUntil(b, 2*time.Minute, func() bool {
			var vc v1alpha1.ValkeyCluster
			return k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "one"}, &vc) == nil && steadyWith(1)(&vc)
		})
		time.Sleep(5 * time.Second)
		base := rssBytes(b, opPID)
		other := benchNamespace(b)
		createUnrelated(b, other, n)
		// Long enough for a cache that held them to have listed and decoded them all.
		time.Sleep(15 * time.Second)
		with := rssBytes(b, opPID)
		b.ReportMetric(float64(base)/(1<<20), "rss-MiB")
		b.ReportMetric(float64(with)/(1<<20), "rss-with-unrelated-MiB")
		b.ReportMetric(float64(with)/float64(base), "rss-ratio")
		helm(b, "uninstall", "valkey-operator", "--namespace", "vo-bench", "--wait")
	}
}

// createUnrelated makes n Secrets and n Pods in ns that have nothing to do with the operator.
func createUnrelated(b *testing.B, ns string, n int) {
	b.Helper()
	cs := cl.Clientset()
	payload := []byte(strings.Repeat("x", 4096))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for j := w; j < n; j += 16 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%04d", j)},
					Data:       map[string][]byte{"data": payload},
				}, metav1.CreateOptions{})
				if err == nil {
					_, err = cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%04d", j), Labels: map[string]string{"app": "unrelated"}},
						Spec: corev1.PodSpec{
							NodeSelector: map[string]string{"no-such-node": "true"},
							Containers:   []corev1.Container{{Name: "c", Image: "unrelated:1", Env: []corev1.EnvVar{{Name: "PAD", Value: string(payload[:1024])}}}},
						},
					}, metav1.CreateOptions{})
				}
				cancel()
				if err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
