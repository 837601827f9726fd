package operatorsuite

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestSentinelTopologyFollowsPodsReCreatedOnNewAddresses: a real cluster gives a re-created pod
// a new address (the local cluster is switched to do the same). A replica's pod is deleted, then
// the primary's; each comes back elsewhere. The primary's deletion is handed over through a
// sentinel (no failover), and every sentinel, asked as an application asks it, ends up naming
// the current primary with exactly the two current replicas: an entry for an address no pod has
// any more does not linger (the operator resets a sentinel that keeps one). A Sentinel-aware
// client writing with WAIT 1 throughout loses nothing.
func TestSentinelTopologyFollowsPodsReCreatedOnNewAddresses(t *testing.T) {
	ns, steady, pass := steadySentinels(t, "valkey/valkey:8.0")
	cl.SetNewIPOnRecreate(true)
	t.Cleanup(func() { cl.SetNewIPOnRecreate(false) })
	ctx := ctxFor(t, 8*time.Minute)
	app := sentinelClient(t, ns, pass)
	w := startSentinelWriter(ctx, app)
	replica := ""
	for _, n := range steady.Status.Nodes {
		if n.Pod != steady.Status.Primary {
			replica = n.Pod
		}
	}
	vc := steady
	for _, pod := range []string{replica, steady.Status.Primary} {
		old, seq := nodeIP(vc, pod), len(vc.Status.History)
		if err := cl.DeletePod(ctx, ns, pod); err != nil {
			t.Fatal(err)
		}
		vc = waitFor(t, ns, "watched", 3*time.Minute, pod+" back on a new address", func(vc *v1alpha1.ValkeyCluster) bool {
			ip := nodeIP(vc, pod)
			return ip != "" && ip != old && steadyWith(3)(vc)
		})
		if pod == steady.Status.Primary {
			plannedHandOvers(t, vc, seq, "primary-leaving", "pod stops")
		}
		sentinelsKnowExactly(t, ctx, ns, pass, vc, 3)
		t.Logf("%s: %s -> %s; the sentinels name %s with the replicas at the current addresses", pod, old, nodeIP(vc, pod), vc.Status.Primary)
	}
	keys, gap := w.stop()
	if len(keys) == 0 {
		t.Fatal("no write was acknowledged while the pods were re-created")
	}
	readBack(t, ctx, app, keys, vc)
	t.Logf("%d writes acknowledged by WAIT 1, longest gap %s", len(keys), gap.Round(time.Millisecond))
}

// sentinelsKnowExactly waits until each of the sentinels (how many run) names vc's primary at
// its address, lists exactly its replicas' addresses, none else, and knows exactly the other
// sentinels.
func sentinelsKnowExactly(t *testing.T, ctx context.Context, ns, pass string, vc *v1alpha1.ValkeyCluster, sentinels int) {
	t.Helper()
	var want []string
	for _, n := range vc.Status.Nodes {
		if n.Pod != vc.Status.Primary {
			want = append(want, n.IP)
		}
	}
	slices.Sort(want)
	primaryIP := nodeIP(vc, vc.Status.Primary)
	deadline := time.Now().Add(90 * time.Second)
	for {
		var last error
		for _, ip := range sentinelIPs(t, ns, "watched", sentinels) {
			if last = sentinelKnows(ctx, ip, pass, primaryIP, want, sentinels-1); last != nil {
				break
			}
		}
		if last == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within 90 s: %v\n%s", last, summary(get(t, ns, "watched")))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// sentinelKnows asks the sentinel at ip, as an application, for the group's primary, replicas
// and other sentinels: an error says how they differ from primaryIP, replicas (sorted) and the
// count of others.
func sentinelKnows(ctx context.Context, ip, pass, primaryIP string, replicas []string, others int) error {
	m, err := sentinelMasterAsApp(ip, pass)
	if err != nil {
		return fmt.Errorf("sentinel %s: %w", ip, err)
	}
	if m["ip"] != primaryIP {
		return fmt.Errorf("sentinel %s names %s, the primary is at %s", ip, m["ip"], primaryIP)
	}
	if m["num-other-sentinels"] != strconv.Itoa(others) {
		return fmt.Errorf("sentinel %s knows %s other sentinels, %d run", ip, m["num-other-sentinels"], others)
	}
	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{ip + ":" + strconv.Itoa(valkey.SentinelPort)}, Password: pass, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return err
	}
	defer c.Close()
	list, err := c.Do(ctx, c.B().Arbitrary("SENTINEL", "REPLICAS", valkey.SentinelGroup).Build()).ToArray()
	if err != nil {
		return fmt.Errorf("SENTINEL REPLICAS on %s: %w", ip, err)
	}
	var got []string
	for _, e := range list {
		r, err := e.AsStrMap()
		if err != nil {
			return err
		}
		got = append(got, r["ip"])
	}
	slices.Sort(got)
	if !slices.Equal(got, replicas) {
		return fmt.Errorf("sentinel %s lists replicas %v, the replicas are at %v", ip, got, replicas)
	}
	return nil
}
