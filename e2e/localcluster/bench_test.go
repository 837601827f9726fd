package localcluster_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
)

// BenchmarkControlPlaneStart measures Start (control plane, nodes, agent, proxy, provisioner:
// ready for Pods) against the reference of a bare valkey-server start in the same run.
func BenchmarkControlPlaneStart(b *testing.B) {
	if cl == nil {
		b.Skip(localcluster.ErrNotRoot.Error())
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		other, err := localcluster.Start(context.Background(), localcluster.Options{Nodes: 3})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		if err := other.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "start-ms")
}

// BenchmarkPodReadyLatency creates 30 Valkey Pods at once and measures creation -> Ready for
// each (p50, p99), against a bare valkey-server started directly and answering PING (the
// reference, measured in the same run): the ratio is what the local cluster adds.
func BenchmarkPodReadyLatency(b *testing.B) {
	if cl == nil {
		b.Skip(localcluster.ErrNotRoot.Error())
	}
	const pods = 30
	var all []time.Duration
	for i := 0; i < b.N; i++ {
		all = append(all, podReadyRound(b, pods)...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	p50, p99 := all[len(all)/2], all[(len(all)*99)/100]
	ref := bareValkeyStart(b)
	b.ReportMetric(float64(p50.Milliseconds()), "p50-ready-ms")
	b.ReportMetric(float64(p99.Milliseconds()), "p99-ready-ms")
	b.ReportMetric(float64(ref.Microseconds())/1000, "ref-bare-start-ms")
	b.ReportMetric(float64(p50)/float64(ref), "p50/ref")
}

func podReadyRound(b *testing.B, n int) []time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs := cl.Clientset()
	ns := fmt.Sprintf("bench-ready-%d", time.Now().UnixNano())
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) }()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		b.Fatal(err)
	}
	sts, _ := valkeyStatefulSet(ns, "x", 1, false)
	spec := sts.Spec.Template.Spec
	spec.Affinity = nil
	// Each Pod gets an emptyDir for /data instead of the StatefulSet's claim.
	spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "p" + strconv.Itoa(i)
			start := time.Now()
			_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: *spec.DeepCopy()}, metav1.CreateOptions{})
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := cl.WaitPodReady(ctx, ns, name, 2*time.Minute); err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			lat = append(lat, time.Since(start))
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(lat) != n {
		b.Fatalf("only %d of %d pods became ready", len(lat), n)
	}
	return lat
}

// bareValkeyStart is the reference: valkey-server started as a plain process until it
// answers PING, the floor under any pod start.
func bareValkeyStart(b *testing.B) time.Duration {
	var best []time.Duration
	for i := 0; i < 5; i++ {
		start := time.Now()
		cmd := exec.Command("valkey-server", "--bind", "127.0.0.1", "--port", "16999", "--save", "")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		for {
			c, err := net.DialTimeout("tcp", "127.0.0.1:16999", 100*time.Millisecond)
			if err == nil {
				_, _ = c.Write([]byte("PING\r\n"))
				buf := make([]byte, 7)
				_, err = c.Read(buf)
				_ = c.Close()
				if err == nil {
					break
				}
			}
			time.Sleep(time.Millisecond)
		}
		best = append(best, time.Since(start))
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	sort.Slice(best, func(i, j int) bool { return best[i] < best[j] })
	return best[len(best)/2]
}
