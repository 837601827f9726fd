package operatorsuite

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestTheClusterTopologyIsFormedByTheMachine applies a ValkeyCluster of topology Cluster, three
// shards of two pods, on Valkey 8.0 and on 9.1: the operator forms the cluster itself (no Job,
// no valkey-cli) as the machine decides, one StatefulSet per shard with the shard's pods on
// different hosts. Independent oracles then check it: valkey-cli --cluster check finds every
// slot covered and every node agreeing, the slots split as the status says, and a
// cluster-aware client (valkey-go's cluster client, seeded with the client Service) writes
// WAIT-acknowledged keys that another client, seeded with one pod, reads back from every shard.
func TestTheClusterTopologyIsFormedByTheMachine(t *testing.T) {
	for _, image := range []string{"valkey/valkey:8.0", "valkey/valkey:9.1"} {
		t.Run(image[strings.LastIndex(image, ":")+1:], func(t *testing.T) { formedByTheMachine(t, image) })
	}
}

func formedByTheMachine(t *testing.T, image string) {
	ns, ctx, vc := steadyShards(t, "shop", 3, 2, image, 5*time.Minute)
	// The machine's even split: shard i serves [i*16384/n, (i+1)*16384/n - 1].
	plan := []string{"0-5460", "5461-10921", "10922-16383"}
	for i, sh := range vc.Status.Shards {
		if sh.Slots != plan[i] || !strings.HasPrefix(sh.Primary, fmt.Sprintf("shop-s%d-", i)) {
			t.Errorf("shard %d: primary %s serves %q, want a pod of shop-s%d serving %s", i, sh.Primary, sh.Slots, i, plan[i])
		}
	}
	checkShardPlacement(t, ns, "shop", 3, 2)
	ips := podIPs(t, ns)
	clusterCheck(t, vc, ips[0])

	// The history says what happened: bootstrapped, then Steady.
	last := vc.Status.History[len(vc.Status.History)-1]
	if last.To != v1alpha1.StateSteady || !strings.Contains(last.Message, "3 shard(s) of 2 node(s) wired") {
		t.Errorf("last transition %+v, want Steady after 3 shards of 2 nodes were wired", last)
	}

	// A cluster-aware application, seeded with the client Service.
	pass := password(t, vc)
	app := clusterClient(t, clientServiceAddr(t, vc), pass)
	const keys = 300
	writeAcked(ctx, t, app, "order:", keys)
	// Another client, seeded with one pod only, reads every key back.
	readAll(ctx, t, clusterClient(t, net.JoinHostPort(ips[len(ips)-1], "6379"), pass), "order:", keys)
	// Every shard took its share, and each shard's replica holds what its primary holds.
	perShard := map[int32]map[string]int64{}
	for _, n := range vc.Status.Nodes {
		c := operatorClient(t, vc, n.IP)
		size, err := c.Do(ctx, c.B().Dbsize().Build()).AsInt64()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if perShard[n.Shard] == nil {
			perShard[n.Shard] = map[string]int64{}
		}
		perShard[n.Shard][string(n.Role)] = size
	}
	total := int64(0)
	for sh, sizes := range perShard {
		if sizes["primary"] == 0 || sizes["primary"] != sizes["replica"] {
			t.Errorf("shard %d: primary holds %d keys, its replica %d", sh, sizes["primary"], sizes["replica"])
		}
		total += sizes["primary"]
	}
	if total != keys {
		t.Errorf("the primaries hold %d keys, want %d", total, keys)
	}
	clusterCheck(t, vc, ips[len(ips)-1])
}

// steadyShards opens the Cluster topology tests: a namespace of its own, an operator, and a
// ValkeyCluster called name of shards shards of pods pods running image ("" for the default),
// Steady with every slot served, its nodes reporting the image's version. ctx lasts timeout.
func steadyShards(t *testing.T, name string, shards, pods int32, image string, timeout time.Duration) (string, context.Context, *v1alpha1.ValkeyCluster) {
	t.Helper()
	ns, ctx, vc, _ := steadyShardsWithOperator(t, name, shards, pods, image, timeout)
	return ns, ctx, vc
}

// steadyShardsWithOperator is steadyShards that also returns the operator, to stop it.
func steadyShardsWithOperator(t *testing.T, name string, shards, pods int32, image string, timeout time.Duration) (string, context.Context, *v1alpha1.ValkeyCluster, *operator) {
	t.Helper()
	ns := cl.Namespace(t)
	op := startOperator(t, "")
	ctx := ctxFor(t, timeout)
	vc := newCluster(ns, name, v1alpha1.TopologyCluster, pods)
	vc.Spec.Shards, vc.Spec.Image = shards, image
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, name, 3*time.Minute, fmt.Sprintf("Steady with %d shards of %d", shards, pods), steadyCluster(int(shards), int(pods)))
	// What a test proves on 9.1 (Atomic Slot Migration, say) needs 9.1 to run: the nodes say.
	if want, named := imageVersions[image]; named {
		if got := nodeVersions(t, vc); !allPrefixed(got, want) {
			t.Fatalf("the nodes of %s run %v, want %s", image, got, want)
		}
	}
	return ns, ctx, vc, op
}

// imageVersions is the version the nodes of each image the cluster tests name must report.
var imageVersions = map[string]string{"valkey/valkey:8.0": "8.0.", "valkey/valkey:9.1": "9.1.2"}

// steadyCluster is a converged Cluster topology: Steady, the current spec observed, shards
// shards with a recorded primary, every slot served, every pod ready, one primary per shard.
func steadyCluster(shards, pods int) func(*v1alpha1.ValkeyCluster) bool {
	return func(vc *v1alpha1.ValkeyCluster) bool {
		primaries := 0
		for _, n := range vc.Status.Nodes {
			if n.Role == v1alpha1.NodeRolePrimary {
				primaries++
			}
		}
		n := shards * pods
		return vc.Status.State == v1alpha1.StateSteady && vc.Status.ObservedGeneration == vc.Generation &&
			vc.Status.ReadyNodes == fmt.Sprintf("%d/%d", n, n) && len(vc.Status.Nodes) == n &&
			int(vc.Status.ShardCount) == shards && len(vc.Status.Shards) == shards &&
			vc.Status.Slots == "16384/16384" && primaries == shards
	}
}

// checkShardPlacement checks one StatefulSet per shard, and that no two pods of a shard share
// a host.
func checkShardPlacement(t *testing.T, ns, name string, shards, pods int) {
	t.Helper()
	ctx := ctxFor(t, 10*time.Second)
	for s := 0; s < shards; s++ {
		var sts appsv1.StatefulSet
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("%s-s%d", name, s)}, &sts); err != nil {
			t.Fatalf("shard %d's StatefulSet: %v", s, err)
		}
		var list corev1.PodList
		if err := k.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{kube.LabelShard: fmt.Sprint(s)}); err != nil {
			t.Fatal(err)
		}
		hosts := map[string]string{}
		for _, p := range list.Items {
			if other, shared := hosts[p.Spec.NodeName]; shared {
				t.Errorf("shard %d: %s and %s share host %s", s, other, p.Name, p.Spec.NodeName)
			}
			hosts[p.Spec.NodeName] = p.Name
		}
		if len(list.Items) != pods {
			t.Errorf("shard %d has %d pods, want %d", s, len(list.Items), pods)
		}
	}
}

// podIPs lists the IPs of the namespace's pods.
func podIPs(t *testing.T, ns string) []string {
	t.Helper()
	var pods corev1.PodList
	if err := k.List(ctxFor(t, 10*time.Second), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, p := range pods.Items {
		if p.Status.PodIP != "" {
			ips = append(ips, p.Status.PodIP)
		}
	}
	if len(ips) == 0 {
		t.Fatal("no pod has an IP")
	}
	return ips
}

// clusterCheck runs valkey-cli --cluster check against one node (as the application user):
// Valkey's own tool, not the operator's code, says whether every slot is covered and every
// node agrees on the configuration.
func clusterCheck(t *testing.T, vc *v1alpha1.ValkeyCluster, ip string) {
	t.Helper()
	valkeyCLICheck(t, password(t, vc), net.JoinHostPort(ip, "6379"), summary(vc))
}

// valkeyCLICheck runs valkey-cli [args] --cluster check addr until it finds every slot covered
// and every node agreeing (gossip settles), failing after 20 s with its output and context.
func valkeyCLICheck(t *testing.T, pass, addr, context string, args ...string) {
	t.Helper()
	var out []byte
	var err error
	deadline := time.Now().Add(20 * time.Second)
	for {
		cmd := exec.Command("valkey-cli", append(append([]string{"--no-auth-warning"}, args...), "--cluster", "check", addr)...)
		cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+pass)
		out, err = cmd.CombinedOutput()
		text := string(out)
		if err == nil && strings.Contains(text, "[OK] All nodes agree about slots configuration.") &&
			strings.Contains(text, "[OK] All 16384 slots covered.") && !strings.Contains(text, "[WARNING]") && !strings.Contains(text, "[ERR]") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("valkey-cli %s --cluster check %s: %v\n%s\n%s", strings.Join(args, " "), addr, err, out, context)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// clusterClient is a cluster-aware client (it follows MOVED and ASK), seeded with addr. Like
// an application starting, it tries again for a while: the client Service's endpoints follow
// the role labels a moment after the cluster is Steady.
func clusterClient(t *testing.T, addr, pass string) vk.Client {
	t.Helper()
	return clusterClientWith(t, vk.ClientOption{InitAddress: []string{addr}, Password: pass})
}

// clusterClientWith is clusterClient with the options given (TLS, say); DisableCache and a
// dial timeout are added.
func clusterClientWith(t *testing.T, opt vk.ClientOption) vk.Client {
	t.Helper()
	opt.DisableCache, opt.Dialer = true, net.Dialer{Timeout: 2 * time.Second}
	var c vk.Client
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		c, err = vk.NewClient(opt)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("cluster client seeded with %v: %v", opt.InitAddress, err)
	}
	t.Cleanup(c.Close)
	if c.Mode() != vk.ClientModeCluster {
		t.Fatalf("the client seeded with %v runs in %s mode, not as a cluster client", opt.InitAddress, c.Mode())
	}
	return c
}

// TestAShardsPrimaryNodeLostFailsOverThatShard stops the host of shard 0's primary in a Cluster
// topology of three shards of three pods (each host runs one pod of every shard, so every
// shard loses a pod, and each shard whose primary was there fails over). Valkey's own
// replica-initiated failover is off (cluster-replica-no-failover): the operator's machine
// fails the shard over with the same rules as a replication group (fence, the most complete
// replica, CLUSTER FAILOVER TAKEOVER). No WAIT-acknowledged write is lost, every slot is served
// again, and when the host comes back its old primaries rejoin as replicas; valkey-cli
// --cluster check then finds the cluster whole.
func TestAShardsPrimaryNodeLostFailsOverThatShard(t *testing.T) {
	ns, ctx, vc := steadyShards(t, "cart", 3, 3, "", 6*time.Minute)
	app := clusterClient(t, clientServiceAddr(t, vc), password(t, vc))
	const keys = 300
	writeAcked(ctx, t, app, "cart:", keys)

	lostHost := ""
	lostPrimaries := map[string]bool{}
	pods := map[string]corev1.Pod{}
	var list corev1.PodList
	if err := k.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		pods[p.Name] = p
	}
	lostHost = pods[vc.Status.Shards[0].Primary].Spec.NodeName
	for _, sh := range vc.Status.Shards {
		if pods[sh.Primary].Spec.NodeName == lostHost {
			lostPrimaries[sh.Primary] = true
		}
	}
	start := time.Now()
	if err := cl.StopNode(ctx, lostHost); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.StartNode(context.Background(), lostHost) })
	vc = waitFor(t, ns, "cart", 2*time.Minute, "every shard's primary off the lost host, every slot served", func(vc *v1alpha1.ValkeyCluster) bool {
		if vc.Status.State != v1alpha1.StateSteady || vc.Status.Slots != "16384/16384" || len(vc.Status.Shards) != 3 {
			return false
		}
		for _, sh := range vc.Status.Shards {
			if lostPrimaries[sh.Primary] {
				return false
			}
		}
		return true
	})
	t.Logf("host %s with primaries %v stopped: every slot served again after %s", lostHost, lostPrimaries, time.Since(start).Round(10*time.Millisecond))
	readAll(ctx, t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "cart:", keys)
	failovers := 0
	for _, h := range vc.Status.History {
		if h.To == v1alpha1.StateFailingOver {
			failovers++
		}
	}
	if failovers < len(lostPrimaries) {
		t.Errorf("history shows %d failover(s), %d primaries were lost:\n%s", failovers, len(lostPrimaries), summary(vc))
	}

	if err := cl.StartNode(ctx, lostHost); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "cart", 2*time.Minute, "the old primaries back as replicas", func(vc *v1alpha1.ValkeyCluster) bool {
		if !steadyCluster(3, 3)(vc) {
			return false
		}
		for _, n := range vc.Status.Nodes {
			if lostPrimaries[n.Pod] && n.Role != v1alpha1.NodeRoleReplica {
				return false
			}
		}
		return true
	})
	clusterCheck(t, vc, podIPs(t, ns)[0])
	readAll(ctx, t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "cart:", keys)
}

// writeAcked writes n keys prefix<i> = prefix<i> through a cluster client, each acknowledged by
// a replica of its shard (WAIT 1 on the connection that wrote it).
func writeAcked(ctx context.Context, t *testing.T, c vk.Client, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("%s%d", prefix, i)
		err := c.Dedicated(func(dc vk.DedicatedClient) error {
			res := dc.DoMulti(ctx, dc.B().Set().Key(key).Value(key).Build(), dc.B().Wait().Numreplicas(1).Timeout(2000).Build())
			if err := res[0].Error(); err != nil {
				return err
			}
			acked, err := res[1].AsInt64()
			if err == nil && acked < 1 {
				err = fmt.Errorf("WAIT 1 answered %d", acked)
			}
			return err
		})
		if err != nil {
			t.Fatalf("writing %s: %v", key, err)
		}
	}
}

// readAll reads the n keys writeAcked wrote and fails on any that is missing or different. A
// read that fails (not a missing key or another value) is tried again for a while, as an
// application's client does: right after a failover or a heal, a client's first slot map may
// come from a node that still marks a primary as failing.
func readAll(ctx context.Context, t *testing.T, c vk.Client, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("%s%d", prefix, i)
		got, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
		for deadline := time.Now().Add(15 * time.Second); err != nil && !vk.IsValkeyNil(err) && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
			got, err = c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
		}
		if err != nil || got != key {
			t.Fatalf("reading %s: %q, %v", key, got, err)
		}
	}
}

// TestAClusterRollingUpgradeFrom80To91KeepsEveryWrite changes the image of a Cluster topology
// (3 shards of 2 pods) from valkey/valkey:8.0 to valkey/valkey:9.1, a real version change in the
// local cluster. Replicas roll first; each shard's primary is handed over to its replica with
// CLUSTER FAILOVER (Valkey's manual failover: the primary pauses, the replica catches up, then
// takes the slots over) before it restarts. A cluster client writing all along loses no
// acknowledged write, every node reports 9.1.2, and valkey-cli --cluster check finds the cluster
// whole.
func TestAClusterRollingUpgradeFrom80To91KeepsEveryWrite(t *testing.T) {
	ns, ctx, vc := steadyShards(t, "roll", 3, 2, "", 6*time.Minute)
	if got := nodeVersions(t, vc); !allPrefixed(got, "8.0.") {
		t.Fatalf("before the upgrade the nodes run %v, want 8.0.x", got)
	}
	before := podRevisions(t, ns)
	w := startWriter(ctx, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "roll")
	vc = get(t, ns, "roll")
	vc.Spec.Image = "valkey/valkey:9.1"
	update(t, ctx, vc)
	vc = waitFor(t, ns, "roll", 4*time.Minute, "every pod rolled to 9.1, Steady", func(vc *v1alpha1.ValkeyCluster) bool {
		if !steadyCluster(3, 2)(vc) {
			return false
		}
		after := podRevisions(t, ns)
		for pod, rev := range after {
			if rev == before[pod] {
				return false
			}
		}
		return len(after) == 6
	})
	if got := nodeVersions(t, vc); !allPrefixed(got, "9.1.2") {
		t.Fatalf("after the upgrade the nodes run %v, want 9.1.2", got)
	}
	lost, acked := w.lost(t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)))
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost in the upgrade:\n%s", lost, acked, summary(vc))
	}
	handOvers := 0
	for _, h := range vc.Status.History {
		if strings.Contains(h.Event, "hand") || strings.Contains(h.Message, "hand") {
			handOvers++
		}
	}
	clusterCheck(t, vc, podIPs(t, ns)[0])
	t.Logf("8.0 -> 9.1.2 in cluster mode: %d writes acknowledged, none lost, %d failed and retried; %d hand-over entries in history", acked, w.failures.Load(), handOvers)
}

// TestEveryPodReCreatedWithNewIPsHeals deletes every pod of a Cluster topology at once, with
// the local cluster giving re-created pods new IPs (as real clusters do). Each node comes back
// from its nodes.conf knowing its peers only at addresses nobody answers at: gossip alone
// cannot find anyone. The operator re-introduces the nodes at their new IPs (add-node), no node
// is forgotten, no slot lost, no WAIT-acknowledged write lost, and valkey-cli --cluster check
// finds the cluster whole.
func TestEveryPodReCreatedWithNewIPsHeals(t *testing.T) {
	ns, ctx, vc := steadyShards(t, "ips", 3, 2, "", 6*time.Minute)
	const keys = 300
	writeAcked(ctx, t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "ips:", keys)
	oldIPs := map[string]bool{}
	for _, n := range vc.Status.Nodes {
		oldIPs[n.IP] = true
	}
	cl.SetNewIPOnRecreate(true)
	t.Cleanup(func() { cl.SetNewIPOnRecreate(false) })
	if err := k.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.MatchingLabels{kube.LabelCluster: "ips"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	vc = waitFor(t, ns, "ips", 3*time.Minute, "every pod back at a new IP, every slot served", func(vc *v1alpha1.ValkeyCluster) bool {
		if !steadyCluster(3, 2)(vc) {
			return false
		}
		for _, n := range vc.Status.Nodes {
			if oldIPs[n.IP] {
				return false
			}
		}
		return true
	})
	t.Logf("every pod re-created with a new IP: Steady with every slot served after %s", time.Since(start).Round(10*time.Millisecond))
	clusterCheck(t, vc, vc.Status.Nodes[0].IP)
	readAll(ctx, t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "ips:", keys)
	// No node was forgotten or added: each node knows exactly the six pods, at their new IPs.
	vc = waitFor(t, ns, "ips", time.Minute, "every node at its new address in every node's view", func(vc *v1alpha1.ValkeyCluster) bool {
		for _, n := range vc.Status.Nodes {
			c := operatorClient(t, vc, n.IP)
			text, err := c.Do(ctx, c.B().ClusterNodes().Build()).ToString()
			c.Close()
			if err != nil {
				return false
			}
			for ip := range oldIPs {
				if strings.Contains(text, " "+ip+":") {
					return false
				}
			}
		}
		return true
	})
	for _, n := range vc.Status.Nodes {
		c := operatorClient(t, vc, n.IP)
		text, err := c.Do(ctx, c.B().ClusterNodes().Build()).ToString()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(strings.TrimPrefix(text, "txt:")), "\n")
		if len(lines) != 6 {
			t.Errorf("%s knows %d nodes, want the 6 pods:\n%s", n.Pod, len(lines), text)
		}
		for ip := range oldIPs {
			if strings.Contains(text, " "+ip+":") {
				t.Errorf("%s still knows a node at the old IP %s:\n%s", n.Pod, ip, text)
			}
		}
	}
}

// TestShardsScaleUpAndDownMoveSlotsWithTheirKeys: 3 → 4 → 3 shards of 2 pods holding 5,000
// keys, with a cluster client writing WAIT-acknowledged keys throughout, on Valkey 8.0 (classic
// migration) and 9.1 (Atomic Slot Migration, chosen by the version the nodes report). Up, the
// new shard gets a quarter of the slots, one range from each shard (the machine moves no more
// than the balance needs); down, those ranges go home, shard 3's nodes leave the bus, its
// StatefulSet and claims are deleted. After each: no acknowledged write lost, every key
// readable, valkey-cli --cluster check whole, the resharding in history.
func TestShardsScaleUpAndDownMoveSlotsWithTheirKeys(t *testing.T) {
	for _, image := range []string{"valkey/valkey:8.0", "valkey/valkey:9.1"} {
		t.Run(image[strings.LastIndex(image, ":")+1:], func(t *testing.T) { scaleShardsUpAndDown(t, image) })
	}
}

// slotsIn counts the slots of a status slots string ("0-4095,5461-5462,16383").
func slotsIn(s string) int {
	n := 0
	for _, r := range strings.Split(s, ",") {
		lo, hi, found := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return -1
		}
		b := a
		if found {
			if b, err = strconv.Atoi(hi); err != nil {
				return -1
			}
		}
		n += b - a + 1
	}
	return n
}

func scaleShardsUpAndDown(t *testing.T, image string) {
	ns, ctx, vc := steadyShards(t, "grow", 3, 2, image, 8*time.Minute)
	app := clusterClient(t, clientServiceAddr(t, vc), password(t, vc))
	const keys = 5000
	for i := 0; i < keys; i += 500 {
		cmds := make(vk.Commands, 0, 500)
		for j := i; j < i+500; j++ {
			cmds = append(cmds, app.B().Set().Key(fmt.Sprintf("grow:%d", j)).Value(fmt.Sprintf("grow:%d", j)).Build())
		}
		for _, r := range app.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	reshard := func(shards int, balanced func(i int, slots string) bool) {
		t.Helper()
		w := startWriter(ctx, app, fmt.Sprintf("to%d", shards))
		vc := get(t, ns, "grow")
		vc.Spec.Shards = int32(shards)
		update(t, ctx, vc)
		start := time.Now()
		// status.state is written before the turn's report: wait for the shards' slots too.
		vc = waitFor(t, ns, "grow", 5*time.Minute, fmt.Sprintf("Steady with %d shards, slots balanced", shards), func(vc *v1alpha1.ValkeyCluster) bool {
			if !steadyCluster(shards, 2)(vc) {
				return false
			}
			for i, sh := range vc.Status.Shards {
				if !balanced(i, sh.Slots) {
					return false
				}
			}
			return true
		})
		took := time.Since(start)
		lost, acked := w.lost(t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)))
		if lost > 0 {
			t.Fatalf("%d of %d acknowledged writes lost while resharding to %d shards:\n%s", lost, acked, shards, summary(vc))
		}
		readAll(ctx, t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "grow:", keys)
		clusterCheck(t, vc, vc.Status.Nodes[0].IP)
		t.Logf("%s: to %d shards with %d keys in %s; the writer had %d writes acknowledged, none lost, %d failed and retried", image, shards, keys, took.Round(10*time.Millisecond), acked, w.failures.Load())
	}
	reshard(4, func(_ int, slots string) bool { return slotsIn(slots) == 4096 })
	home := []string{"0-5460", "5461-10921", "10922-16383"}
	reshard(3, func(i int, slots string) bool { return slots == home[i] })

	vc = get(t, ns, "grow")
	resharded := 0
	for _, h := range vc.Status.History {
		if h.From == v1alpha1.StateSteady && h.To == v1alpha1.StateResharding {
			resharded++
		}
	}
	if resharded != 2 {
		t.Errorf("history shows %d reshardings, want 2:\n%s", resharded, summary(vc))
	}
	// Shard 3 is gone: its StatefulSet and its claims.
	var sts appsv1.StatefulSet
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "grow-s3"}, &sts); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet grow-s3 is still there (%v)", err)
	}
	var claims corev1.PersistentVolumeClaimList
	if err := k.List(ctx, &claims, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	left := 0
	for _, c := range claims.Items {
		if strings.Contains(c.Name, "grow-s3-") {
			t.Errorf("claim %s of the removed shard is still there", c.Name)
		}
		left++
	}
	if left != 6 {
		t.Errorf("%d claims, want 6 (3 shards of 2 pods)", left)
	}
}
