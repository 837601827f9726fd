package operatorsuite

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// kubectl valkey failover in the Sentinel topology: the sentinels carry the switchover out
// (SENTINEL FAILOVER, the other replica held back), while an application writes through
// valkey-go's Sentinel client with WAIT 1. The target becomes the primary, history records
// the sentinels' failover as the requested hand-over, every WAIT-acknowledged write is on
// every node, and the sentinels, asked as an application, list every replica at its priority
// again (none left held back).
func TestSentinelTopologySwitchesOverThroughTheSentinels(t *testing.T) {
	for _, image := range []string{"valkey/valkey:8.0", "valkey/valkey:9.1"} {
		t.Run(image, func(t *testing.T) { sentinelSwitchover(t, image) })
	}
}

func sentinelSwitchover(t *testing.T, image string) {
	ns, steady, pass := steadySentinels(t, image)
	ctx := ctxFor(t, 5*time.Minute)
	app := sentinelClient(t, ns, pass)
	if err := setAndWait(ctx, app, "before-", 100, 1); err != nil {
		t.Fatalf("writing through the sentinels: %v\n%s", err, summary(get(t, ns, "watched")))
	}
	target := ""
	for _, n := range steady.Status.Nodes {
		if n.Pod != steady.Status.Primary {
			target = n.Pod
			break
		}
	}

	w := startSentinelWriter(ctx, app)
	time.Sleep(time.Second)
	annotate(t, ctx, ns, "watched", v1beta1.AnnotationSwitchoverTo, target)
	after := waitFor(t, ns, "watched", 2*time.Minute, "Steady with "+target+" the primary and the request answered", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(3)(vc) && vc.Status.Primary == target && vc.Annotations[v1beta1.AnnotationSwitchoverTo] == ""
	})
	time.Sleep(2 * time.Second)
	keys, gap := w.stop()

	recorded := false
	for _, h := range after.Status.History {
		recorded = recorded || (h.Event == "sentinel-promoted" && strings.Contains(h.Message, "the requested hand-over to "+target))
	}
	if !recorded {
		t.Errorf("history shows no sentinel-promoted for the requested hand-over:\n%s", summary(after))
	}
	if len(keys) == 0 {
		t.Fatal("no write was acknowledged during the switchover")
	}
	readBack(t, ctx, app, keys, after)
	everyNodeHolds(t, ns, pass, "before-", 100)

	// Held-back replicas get their priority back: every sentinel lists both replicas above 0.
	deadline := time.Now().Add(time.Minute)
	for {
		err := replicasAtPriority(ctx, sentinelIPs(t, ns, "watched", 3), pass, 2)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v\n%s", err, summary(get(t, ns, "watched")))
		}
		time.Sleep(time.Second)
	}
	t.Logf("switchover %s -> %s through the sentinels: %d writes acknowledged during it, longest gap %s", steady.Status.Primary, target, len(keys), gap.Round(time.Millisecond))
}

// replicasAtPriority checks that every sentinel, asked as an application, lists want replicas,
// each at a replica-priority above 0.
func replicasAtPriority(ctx context.Context, ips []string, pass string, want int) error {
	for _, ip := range ips {
		c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{ip + ":" + strconv.Itoa(valkey.SentinelPort)}, Password: pass, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			return err
		}
		list, err := c.Do(ctx, c.B().Arbitrary("SENTINEL", "REPLICAS", valkey.SentinelGroup).Build()).ToArray()
		if err != nil {
			c.Close()
			return fmt.Errorf("SENTINEL REPLICAS on %s: %w", ip, err)
		}
		if len(list) < want {
			c.Close()
			return fmt.Errorf("sentinel %s lists %d replicas, want %d", ip, len(list), want)
		}
		for _, e := range list {
			m, err := e.AsStrMap()
			if err != nil {
				c.Close()
				return err
			}
			if strings.Contains(m["flags"], "s_down") {
				continue // an address the replica left (a stale entry)
			}
			if m["slave-priority"] == "0" {
				c.Close()
				return fmt.Errorf("sentinel %s lists %s at replica-priority 0", ip, m["ip"])
			}
		}
		c.Close()
	}
	return nil
}

// sentinelWriter is an application writing one key at a time through a Sentinel-aware client,
// each acknowledged by WAIT 1; the longest stretch without an acknowledged write is a
// hand-over's gap as the application sees it.
type sentinelWriter struct {
	mu      sync.Mutex
	acked   []string
	longest time.Duration
	quit    chan struct{}
	done    chan struct{}
}

func startSentinelWriter(ctx context.Context, app vk.Client) *sentinelWriter {
	w := &sentinelWriter{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		last := time.Now()
		for i := 0; ; i++ {
			select {
			case <-w.quit:
				return
			default:
			}
			key := "during-" + strconv.Itoa(i)
			wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err := app.Dedicated(func(dc vk.DedicatedClient) error {
				if err := dc.Do(wctx, dc.B().Set().Key(key).Value("v").Build()).Error(); err != nil {
					return err
				}
				got, err := dc.Do(wctx, dc.B().Wait().Numreplicas(1).Timeout(2000).Build()).AsInt64()
				if err == nil && got < 1 {
					err = fmt.Errorf("WAIT 1 answered %d", got)
				}
				return err
			})
			cancel()
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			w.mu.Lock()
			w.acked = append(w.acked, key)
			w.longest = max(w.longest, time.Since(last))
			w.mu.Unlock()
			last = time.Now()
		}
	}()
	return w
}

// stop ends the writer and returns the keys WAIT acknowledged and the longest gap.
func (w *sentinelWriter) stop() ([]string, time.Duration) {
	close(w.quit)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.acked...), w.longest
}

// readBack reads every key through the application's client: each must hold "v".
func readBack(t *testing.T, ctx context.Context, app vk.Client, keys []string, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	for _, key := range keys {
		if v, err := app.Do(ctx, app.B().Get().Key(key).Build()).ToString(); err != nil || v != "v" {
			t.Fatalf("WAIT-acknowledged %s lost: %q, %v\n%s", key, v, err, summary(vc))
		}
	}
}
