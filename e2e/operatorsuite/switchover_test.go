package operatorsuite

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// kubectlValkey runs the plugin against the local cluster.
func kubectlValkey(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(pluginBinary(t), append(args, "--kubeconfig", cl.KubeconfigPath())...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl valkey %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writer writes keys through the client Service until stopped and remembers which writes
// were acknowledged.
type writer struct {
	acked    sync.Map
	failures atomic.Int64
	stop     chan struct{}
	done     chan struct{}
}

func startWriter(ctx context.Context, c vk.Client, prefix string) *writer {
	w := &writer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			key := fmt.Sprintf("%s-%d", prefix, i)
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			err := c.Do(wctx, c.B().Set().Key(key).Value("v").Build()).Error()
			cancel()
			if err == nil {
				w.acked.Store(key, true)
			} else {
				w.failures.Add(1)
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	return w
}

// lost stops the writer and counts acknowledged writes the cluster no longer has.
func (w *writer) lost(t *testing.T, c vk.Client) (lost, acked int) {
	t.Helper()
	close(w.stop)
	<-w.done
	ctx := ctxFor(t, time.Minute)
	w.acked.Range(func(k, _ any) bool {
		acked++
		v, err := c.Do(ctx, c.B().Get().Key(k.(string)).Build()).ToString()
		if err != nil || v != "v" {
			lost++
		}
		return true
	})
	return lost, acked
}

func TestKubectlValkeyFailoverSwitchesOverWithoutLoss(t *testing.T) {
	ns, ctx, vc := steadyReplication(t, "sw", 4*time.Minute)
	old := vc.Status.Primary
	c := writable(t, vc)
	w := startWriter(ctx, c, "sw")
	time.Sleep(300 * time.Millisecond)
	phases := watchPhases(t, ctx, ns, "sw")
	kubectlValkey(t, "failover", "sw", "-n", ns)
	vc = waitFor(t, ns, "sw", 2*time.Minute, "switched over", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(3)(vc) && vc.Status.Primary != old && vc.Annotations[v1beta1.AnnotationSwitchoverTo] == ""
	})
	time.Sleep(300 * time.Millisecond)
	lost, acked := w.lost(t, writable(t, vc))
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost in a planned switchover:\n%s", lost, acked, summary(vc))
	}
	// A planned hand-over reads as one: nobody is paged by FailingOver for it.
	if seen := phases(); !slices.Contains(seen, "SwitchingOver") || slices.Contains(seen, "FailingOver") {
		t.Errorf("status.phase went through %v during a planned switchover, want SwitchingOver and never FailingOver", seen)
	}
	hist := kubectlValkey(t, "history", "sw", "-n", ns)
	if !strings.Contains(hist, "switchover-requested") {
		t.Fatalf("history does not show the switchover:\n%s", hist)
	}
	t.Logf("switchover %s -> %s: %d writes acknowledged, none lost, %d failed and retried", old, vc.Status.Primary, acked, w.failures.Load())
}

func TestKubectlValkeyRestartRollsEveryPod(t *testing.T) {
	ns, ctx, vc := steadyReplication(t, "rs", 4*time.Minute)
	before := podRevisions(t, ns)
	w := startWriter(ctx, writable(t, vc), "rs")
	kubectlValkey(t, "restart", "rs", "-n", ns)
	vc = waitFor(t, ns, "rs", 3*time.Minute, "every pod restarted", everyPodRestarted(t, ns, before, 3))
	if lost, acked := w.lost(t, writable(t, vc)); lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost in a rolling restart:\n%s", lost, acked, summary(vc))
	}
}
