package operatorsuite

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestOneWriterThroughShards3To5To3AndReplicas2To3To2: one cluster client writes
// WAIT-acknowledged keys (SET, then WAIT 1: a replica has it) from the first Steady to the last,
// through four changes on Valkey 9.1: shards 3 → 5 (asked with kubectl valkey reshard --shards
// 5, the plugin against the real operator), 5 → 3, pods per shard 2 → 3 and 3 → 2. After each:
// Steady with the slots balanced as the machine's plan says (3 → 5 → 3 comes home to the even
// split), valkey-cli --cluster check whole, every node knowing exactly the pods that exist. At the
// end every acknowledged write reads back through another client, and the removed shards'
// StatefulSets and claims are gone. The client may see errors a cluster client handles
// (redirections, a moment of TRYAGAIN during a move) and retries; it must never lose an
// acknowledged key.
func TestOneWriterThroughShards3To5To3AndReplicas2To3To2(t *testing.T) {
	const name = "life"
	ns, ctx, vc := steadyShards(t, name, 3, 2, "valkey/valkey:9.1", 12*time.Minute)
	w := startAckedWriter(ctx, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "life")
	defer w.stopWriting()

	step := func(what string, shards, pods int, change func()) {
		t.Helper()
		before := w.acked.Load()
		start := time.Now()
		change()
		plan := machine.SlotPlan(shards)
		vc = waitFor(t, ns, name, 5*time.Minute, what, func(vc *v1alpha1.ValkeyCluster) bool {
			if !steadyCluster(shards, pods)(vc) || len(vc.Status.Shards) != shards {
				return false
			}
			for i, sh := range vc.Status.Shards {
				if slotsIn(sh.Slots) != plan[i].End-plan[i].Start+1 {
					return false
				}
			}
			return true
		})
		took := time.Since(start)
		clusterCheck(t, vc, vc.Status.Nodes[0].IP)
		knowExactlyThePods(ctx, t, vc)
		// The writer went on through the change (it is not stuck behind it).
		deadline := time.Now().Add(10 * time.Second)
		for w.acked.Load() < before+20 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if w.acked.Load() < before+20 {
			t.Fatalf("%s: the writer has %d acknowledged writes, %d before the change: it stopped", what, w.acked.Load(), before)
		}
		t.Logf("%s in %s; %d writes acknowledged so far, %d failed and retried", what, took.Round(10*time.Millisecond), w.acked.Load(), w.failures.Load())
	}

	step("3 → 5 shards", 5, 2, func() {
		out := kubectlValkey(t, "reshard", name, "-n", ns, "--shards", "5")
		if !strings.Contains(out, "spec.shards of life set to 5 (was 3)") || !strings.Contains(out, "Plan for 3 → 5 shards") {
			t.Fatalf("kubectl valkey reshard --shards 5:\n%s", out)
		}
	})
	if out := kubectlValkey(t, "reshard", name, "-n", ns); !strings.Contains(out, "Slots balanced over 5 shards: nothing to move.") {
		t.Fatalf("kubectl valkey reshard after 3 → 5:\n%s", out)
	}
	step("5 → 3 shards", 3, 2, func() {
		vc := get(t, ns, name)
		vc.Spec.Shards = 3
		update(t, ctx, vc)
	})
	home := []string{"0-5460", "5461-10921", "10922-16383"}
	for i, sh := range vc.Status.Shards {
		if sh.Slots != home[i] {
			t.Errorf("after 3 → 5 → 3 shard %d serves %q, want %s (the even split again)", i, sh.Slots, home[i])
		}
	}
	for _, pods := range []int{3, 2} {
		step(fmt.Sprintf("%d pods per shard", pods), 3, pods, func() {
			vc := get(t, ns, name)
			vc.Spec.Replicas = int32(pods)
			update(t, ctx, vc)
		})
	}

	w.stopWriting()
	acked, lost := w.check(ctx, t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)))
	if len(lost) > 0 {
		t.Fatalf("%d of %d WAIT-acknowledged writes lost, e.g. %v:\n%s", len(lost), acked, lost[:min(5, len(lost))], summary(vc))
	}
	if acked < 100 {
		t.Fatalf("only %d writes acknowledged in the whole run", acked)
	}
	for _, s := range []string{"life-s3", "life-s4"} {
		var sts appsv1.StatefulSet
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: s}, &sts); !apierrors.IsNotFound(err) {
			t.Errorf("StatefulSet %s of a removed shard is still there (%v)", s, err)
		}
	}
	var claims corev1.PersistentVolumeClaimList
	if err := k.List(ctx, &claims, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, c := range claims.Items {
		if strings.Contains(c.Name, "life-s3-") || strings.Contains(c.Name, "life-s4-") {
			t.Errorf("claim %s of a removed shard is still there", c.Name)
		}
	}
	t.Logf("one writer through 3 → 5 → 3 shards and 2 → 3 → 2 pods per shard: %d WAIT-acknowledged writes, none lost, %d failed and retried: %v", acked, w.failures.Load(), w.errs)
	if bad := unhandledErrors(w.errs); len(bad) > 0 {
		t.Errorf("the client met errors a cluster client does not expect: %v", bad)
	}
}

// knowExactlyThePods waits (gossip spreads a change within a few cluster cron ticks) until
// every node's view lists exactly the pods that exist.
func knowExactlyThePods(ctx context.Context, t *testing.T, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	for _, n := range vc.Status.Nodes {
		var text string
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			c := operatorClient(t, vc, n.IP)
			var err error
			text, err = c.Do(ctx, c.B().ClusterNodes().Build()).ToString()
			c.Close()
			if err != nil {
				t.Fatal(err)
			}
			got := len(strings.Split(strings.TrimSpace(strings.TrimPrefix(text, "txt:")), "\n"))
			if got == len(vc.Status.Nodes) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s knows %d nodes, %d pods exist:\n%s", n.Pod, got, len(vc.Status.Nodes), text)
			}
		}
	}
}

// ackedWriter writes keys through a cluster client until stopped, each SET followed by WAIT 1
// on the same connection: a key counts as acknowledged only once a replica has it.
type ackedWriter struct {
	mu       sync.Mutex
	keys     []string
	acked    atomic.Int64
	failures atomic.Int64
	errs     map[string]int // by kind, under mu
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
}

func startAckedWriter(ctx context.Context, c vk.Client, prefix string) *ackedWriter {
	w := &ackedWriter{stop: make(chan struct{}), done: make(chan struct{}), errs: map[string]int{}}
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			key := fmt.Sprintf("%s:%d", prefix, i)
			wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err := c.Dedicated(func(dc vk.DedicatedClient) error {
				res := dc.DoMulti(wctx, dc.B().Set().Key(key).Value(key).Build(), dc.B().Wait().Numreplicas(1).Timeout(1000).Build())
				if err := res[0].Error(); err != nil {
					return err
				}
				n, err := res[1].AsInt64()
				if err == nil && n < 1 {
					err = fmt.Errorf("WAIT 1 answered %d", n)
				}
				return err
			})
			cancel()
			if err != nil {
				w.failures.Add(1)
				w.mu.Lock()
				w.errs[errorKind(err)]++
				w.mu.Unlock()
				time.Sleep(20 * time.Millisecond)
				continue
			}
			w.mu.Lock()
			w.keys = append(w.keys, key)
			w.mu.Unlock()
			w.acked.Add(1)
		}
	}()
	return w
}

func (w *ackedWriter) stopWriting() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

// check reads every acknowledged key with c (another client than the writer's) and lists
// those missing or different.
func (w *ackedWriter) check(ctx context.Context, t *testing.T, c vk.Client) (acked int, lost []string) {
	t.Helper()
	w.mu.Lock()
	keys := append([]string(nil), w.keys...)
	w.mu.Unlock()
	for _, key := range keys {
		var v string
		var err error
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			v, err = c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
			if err == nil || vk.IsValkeyNil(err) || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || v != key {
			lost = append(lost, key)
		}
	}
	return len(keys), lost
}

// errorKind is an error's first word or two (TRYAGAIN, CLUSTERDOWN, "WAIT 1 answered", a
// timeout), without the slot numbers and addresses that make each message different.
func errorKind(err error) string {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "WAIT 1 answered"):
		return "WAIT 1 answered 0"
	case strings.Contains(msg, "deadline exceeded"):
		return "timeout"
	}
	f := strings.Fields(msg)
	switch {
	case len(f) > 0 && (f[0] == "MOVED" || f[0] == "ASK" || f[0] == "TRYAGAIN"):
		return f[0] // the slot and address differ each time
	case len(f) > 3:
		f = f[:3]
	}
	return strings.Join(f, " ")
}

// unhandledErrors lists the kinds that are not among those a cluster client meets while slots
// move and pods change, and retries: a redirection (MOVED, ASK: the writer pins SET and WAIT
// to one connection, so the client hands them over instead of following them), a slot caught
// mid-move (TRYAGAIN), a moment without a replica to acknowledge (a WAIT that answers 0), a
// request that timed out. A closed connection (EOF) is not among them, not even from a node
// that no longer serves slots: a client cannot tell it from a failure, and the operator takes a
// leaving node off the bus only after it answered MOVED until its clients moved on (remove-node
// drains, then resets it), and stops its pod only after that.
func unhandledErrors(errs map[string]int) []string {
	var out []string
	for kind, n := range errs {
		switch kind {
		case "MOVED", "ASK", "TRYAGAIN", "WAIT 1 answered 0", "timeout":
		default:
			out = append(out, fmt.Sprintf("%s ×%d", kind, n))
		}
	}
	return out
}
