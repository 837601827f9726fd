package operatorsuite

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestSentinelTopologyFailsOverWithSentinelsQuorum: a Sentinel topology (three data pods,
// three sentinels) bootstraps, the operator tells every sentinel the primary, and an
// application that asks the sentinels for the primary (valkey-go's Sentinel client, not the
// operator's code) writes with WAIT. The primary's node is powered off: the sentinels' quorum
// fails it over, the operator records Sentinel's decision with its epoch, and every
// acknowledged write is read back through the same Sentinel-aware client from the new
// primary. The node comes back: the old primary rejoins as a replica of the new one. On
// Valkey 8.0 and 9.1: the sentinels' user on the data nodes must allow what each version's
// Sentinel sends.
func TestSentinelTopologyFailsOverWithSentinelsQuorum(t *testing.T) {
	for _, image := range []string{"valkey/valkey:8.0", "valkey/valkey:9.1"} {
		t.Run(image, func(t *testing.T) { sentinelFailover(t, image) })
	}
}

func sentinelFailover(t *testing.T, image string) {
	ns, steady, pass := steadySentinels(t, image)
	ctx := ctxFor(t, 5*time.Minute)

	app := sentinelClient(t, ns, pass)
	const n = 200
	if err := setAndWait(ctx, app, "before-", n, 1); err != nil {
		t.Fatalf("writing through the sentinels: %v\n%s", err, summary(get(t, ns, "watched")))
	}

	pod, err := cl.Clientset().CoreV1().Pods(ns).Get(ctx, steady.Status.Primary, metav1GetOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.StopNode(ctx, pod.Spec.NodeName); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.StartNode(context.Background(), pod.Spec.NodeName) })
	after := sentinelPromotionRecorded(t, ns, steady.Status.Primary)

	// The application finds the new primary through the sentinels; nothing it was told
	// was written is missing.
	deadline := time.Now().Add(time.Minute)
	for {
		err = setAndWait(ctx, app, "after-", 10, 1)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("no WAIT-acknowledged write through the sentinels after the failover: %v\n%s", err, summary(get(t, ns, "watched")))
	}
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("before-%d", i)
		if v, err := app.Do(ctx, app.B().Get().Key(key).Build()).ToString(); err != nil || v != "v" {
			t.Fatalf("WAIT-acknowledged %s lost in Sentinel's failover: %q, %v\n%s", key, v, err, summary(after))
		}
	}

	if err := cl.StartNode(ctx, pod.Spec.NodeName); err != nil {
		t.Fatal(err)
	}
	backAsReplica(t, ns, steady.Status.Primary, after.Status.Primary)
	if err := setAndWait(ctx, app, "rejoined-", 10, 2); err != nil {
		t.Fatalf("WAIT 2 with the old primary back: %v\n%s", err, summary(get(t, ns, "watched")))
	}
	everyNodeHolds(t, ns, pass, "before-", n)
}

// steadySentinels starts an operator and a Sentinel topology "watched" of three data pods and
// three sentinels (down after 5 s, failover-timeout 20 s) on image, and waits until it is
// Steady and every sentinel monitors the primary with both replicas and both other sentinels
// known: asked as an application asks them (the application password, the read-only rules),
// not through the operator. It returns the namespace, the Steady cluster and the password.
func steadySentinels(t *testing.T, image string) (string, *v1alpha1.ValkeyCluster, string) {
	t.Helper()
	ns := cl.Namespace(t)
	startOperator(t, "")
	steady, pass := steadySentinelsIn(t, ns, image)
	return ns, steady, pass
}

// steadySentinelsIn is steadySentinels in ns, with an operator the caller started.
func steadySentinelsIn(t *testing.T, ns, image string) (*v1alpha1.ValkeyCluster, string) {
	t.Helper()
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "watched"}, Spec: v1beta1.ValkeyClusterSpec{
		Topology: v1beta1.TopologySentinel, Replicas: ptrTo(int32(2)), Image: image,
		Sentinel: &v1beta1.SentinelSpec{Replicas: 3, DownAfter: &metav1.Duration{Duration: 5 * time.Second}, FailoverTimeout: &metav1.Duration{Duration: 20 * time.Second}},
	}}
	if err := k.Create(ctxFor(t, 10*time.Second), vc); err != nil {
		t.Fatal(err)
	}
	steady := waitFor(t, ns, "watched", 3*time.Minute, "Steady with 3 ready", steadyWith(3))
	pass := password(t, steady)
	primaryIP := nodeIP(steady, steady.Status.Primary)
	awaitSentinels(t, sentinelIPs(t, ns, "watched", 3), pass, 90*time.Second, func(m map[string]string) error {
		if got := m["ip"]; got != primaryIP {
			return fmt.Errorf("names %s, the primary is %s", got, primaryIP)
		}
		if m["num-slaves"] != "2" || m["num-other-sentinels"] != "2" {
			return fmt.Errorf("knows %s replicas and %s other sentinels, want 2 and 2", m["num-slaves"], m["num-other-sentinels"])
		}
		return nil
	})
	return steady, pass
}

// sentinelPromotionRecorded waits until the cluster is Steady with a primary other than old
// and fails unless history records the sentinels' promotion with its epoch.
func sentinelPromotionRecorded(t *testing.T, ns, old string) *v1alpha1.ValkeyCluster {
	t.Helper()
	after := waitFor(t, ns, "watched", 2*time.Minute, "Sentinel's failover recorded", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.State == v1alpha1.StateSteady && vc.Status.Primary != "" && vc.Status.Primary != old
	})
	var promoted *v1alpha1.HistoryEntry
	for i := range after.Status.History {
		if h := &after.Status.History[i]; h.Event == string(machine.EventSentinelPromoted) {
			promoted = h
		}
	}
	if promoted == nil || !strings.Contains(promoted.Message, "epoch") {
		t.Fatalf("history does not record Sentinel's promotion with its epoch:\n%s", summary(after))
	}
	t.Logf("recorded: %s", promoted.Message)
	return after
}

// backAsReplica waits until pod is a replica of primary and the cluster Steady with 3 ready.
func backAsReplica(t *testing.T, ns, pod, primary string) *v1alpha1.ValkeyCluster {
	t.Helper()
	return waitFor(t, ns, "watched", 2*time.Minute, pod+" back as a replica", func(vc *v1alpha1.ValkeyCluster) bool {
		for _, node := range vc.Status.Nodes {
			if node.Pod == pod {
				return node.Role == v1alpha1.NodeRoleReplica && vc.Status.Primary == primary && steadyWith(3)(vc)
			}
		}
		return false
	})
}

// nodeIP is the pod IP status reports for pod.
func nodeIP(vc *v1alpha1.ValkeyCluster, pod string) string {
	for _, n := range vc.Status.Nodes {
		if n.Pod == pod {
			return n.IP
		}
	}
	return ""
}

// sentinelIPs waits for want sentinel pods with an IP each and returns the IPs.
func sentinelIPs(t *testing.T, ns, name string, want int) []string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var pods corev1.PodList
		sel := kube.SentinelSelectorLabels(valkeyapi.HubOf(get(t, ns, name)))
		if err := k.List(ctxFor(t, 10*time.Second), &pods, client.InNamespace(ns), client.MatchingLabels(sel)); err != nil {
			t.Fatal(err)
		}
		var ips []string
		for _, p := range pods.Items {
			if p.Status.PodIP != "" {
				ips = append(ips, p.Status.PodIP)
			}
		}
		if len(ips) == want {
			return ips
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sentinel pods with an address, want %d", len(ips), want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// sentinelServiceIP is the cluster IP of the sentinels' client Service.
func sentinelServiceIP(t *testing.T, ns, name string) string {
	t.Helper()
	var svc corev1.Service
	if err := k.Get(ctxFor(t, 10*time.Second), client.ObjectKey{Namespace: ns, Name: kube.SentinelServiceName(valkeyapi.HubOf(get(t, ns, name)))}, &svc); err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

// awaitSentinels polls SENTINEL MASTER on every sentinel, as an application (the default
// user), until ok accepts each answer.
func awaitSentinels(t *testing.T, ips []string, pass string, timeout time.Duration, ok func(map[string]string) error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var last error
		for _, ip := range ips {
			m, err := sentinelMasterAsApp(ip, pass)
			if err == nil {
				err = ok(m)
			}
			if err != nil {
				last = fmt.Errorf("sentinel %s: %w", ip, err)
				break
			}
		}
		if last == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", timeout, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func sentinelMasterAsApp(ip, pass string) (map[string]string, error) {
	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{net.JoinHostPort(ip, strconv.Itoa(valkey.SentinelPort))}, Password: pass,
		DisableCache: true, ForceSingleClient: true, Dialer: net.Dialer{Timeout: 2 * time.Second}})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.Do(ctx, c.B().Arbitrary("SENTINEL", "MASTER", valkey.SentinelGroup).Build()).AsStrMap()
}

// TestSentinelTopologyKeepsItsSentinels: a deleted sentinel pod comes back on its volume as the
// same sentinel (its id kept, no stranger left among the others' peers); with two of the three
// sentinels frozen and the primary frozen too, no quorum can act: nothing is promoted, status
// says what the operator waits for, and once everything answers again the same primary serves.
// The operator's sentinel gauges say the same in a real scrape, and every metric of them the
// chart's alerts query is there.
func TestSentinelTopologyKeepsItsSentinels(t *testing.T) {
	ns := cl.Namespace(t)
	addr, token := metricsOperator(t, ns)
	steady, pass := steadySentinelsIn(t, ns, "valkey/valkey:8.0")
	ctx := ctxFor(t, 5*time.Minute)
	sentinelGauges(t, addr, token, ns, 3, 3, 3)
	sentinel0 := kube.SentinelSetName(valkeyapi.HubOf(steady)) + "-0"
	ip0 := podIP(t, ns, sentinel0)
	id, err := sentinelMyID(ip0, pass)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.DeletePod(ctx, ns, sentinel0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ip := podIP(t, ns, sentinel0)
		got, err := sentinelMyID(ip, pass)
		if err == nil && ip != "" {
			if got != id {
				t.Fatalf("the re-created %s is sentinel %s, was %s: its file was not kept", sentinel0, got, id)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not back within a minute: %v", sentinel0, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	primaryIP := nodeIP(steady, steady.Status.Primary)
	awaitSentinels(t, sentinelIPs(t, ns, "watched", 3), pass, time.Minute, func(m map[string]string) error {
		if m["ip"] != primaryIP || m["num-other-sentinels"] != "2" {
			return fmt.Errorf("names %s with %s other sentinels, want %s with 2", m["ip"], m["num-other-sentinels"], primaryIP)
		}
		return nil
	})

	// Two sentinels and the primary frozen: the one sentinel left cannot reach a quorum.
	frozen := []struct{ pod, container string }{
		{kube.SentinelSetName(valkeyapi.HubOf(steady)) + "-1", "sentinel"},
		{kube.SentinelSetName(valkeyapi.HubOf(steady)) + "-2", "sentinel"},
		{steady.Status.Primary, "valkey"},
	}
	for _, f := range frozen {
		if err := cl.PauseContainer(ns, f.pod, f.container); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.ResumeContainer(ns, f.pod, f.container) })
	}
	waiting := waitFor(t, ns, "watched", time.Minute, "status saying the sentinels decide", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.State == v1alpha1.StateFailingOver && strings.Contains(vc.Status.Waiting, "sentinel")
	})
	t.Logf("waiting: %s", waiting.Status.Waiting)
	sentinelGauges(t, addr, token, ns, 3, 1, 1)
	// Three times down-after and more: long enough for a failover, had anyone made one.
	time.Sleep(20 * time.Second)
	for _, n := range get(t, ns, "watched").Status.Nodes {
		if n.Pod != steady.Status.Primary && n.Role == v1alpha1.NodeRolePrimary {
			t.Fatalf("%s was promoted with no quorum of sentinels:\n%s", n.Pod, summary(get(t, ns, "watched")))
		}
	}
	for _, f := range frozen {
		if err := cl.ResumeContainer(ns, f.pod, f.container); err != nil {
			t.Fatal(err)
		}
	}
	back := waitFor(t, ns, "watched", 2*time.Minute, "Steady again", steadyWith(3))
	if back.Status.Primary != steady.Status.Primary {
		t.Fatalf("the primary moved from %s to %s with no quorum of sentinels:\n%s", steady.Status.Primary, back.Status.Primary, summary(back))
	}
	if err := setAndWait(ctx, writable(t, back), "after-", 10, 2); err != nil {
		t.Fatalf("WAIT 2 once everything answers again: %v\n%s", err, summary(back))
	}
}

// podIP is pod's IP ("" while it has none or does not exist).
func podIP(t *testing.T, ns, pod string) string {
	t.Helper()
	p, err := cl.Clientset().CoreV1().Pods(ns).Get(ctxFor(t, 10*time.Second), pod, metav1GetOptions())
	if err != nil {
		return ""
	}
	return p.Status.PodIP
}

func sentinelMyID(ip, pass string) (string, error) {
	if ip == "" {
		return "", fmt.Errorf("no address")
	}
	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{net.JoinHostPort(ip, strconv.Itoa(valkey.SentinelPort))}, Password: pass,
		DisableCache: true, ForceSingleClient: true, Dialer: net.Dialer{Timeout: 2 * time.Second}})
	if err != nil {
		return "", err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.Do(ctx, c.B().Arbitrary("SENTINEL", "MYID").Build()).ToString()
}

// TestSentinelTopologyLosesNoWAITedWriteWhenThePrimaryGoes: the primary's process SIGKILLed
// (it restarts on its volume, fenced) and the primary's pod deleted (it comes back, maybe on
// another address), each under an application that asks the sentinels for the primary. The
// cluster is Steady again with every pod ready, the application writes again with WAIT, and
// every write WAIT acknowledged before is read back. A SIGKILLed primary is usually back on
// its volume before the sentinels find it down: the machine then re-admits it in place
// (primary-readmitted), which is the claim here as much as a failover would be.
func TestSentinelTopologyLosesNoWAITedWriteWhenThePrimaryGoes(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault func(ctx context.Context, ns, pod string) error
	}{
		{"SIGKILL", func(_ context.Context, ns, pod string) error { return cl.KillContainer(ns, pod, "valkey") }},
		{"deleted pod", func(ctx context.Context, ns, pod string) error { return cl.DeletePod(ctx, ns, pod) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns, steady, pass := steadySentinels(t, "valkey/valkey:8.0")
			ctx := ctxFor(t, 5*time.Minute)
			app := sentinelClient(t, ns, pass)
			const n = 200
			if err := setAndWait(ctx, app, "before-", n, 1); err != nil {
				t.Fatalf("writing through the sentinels: %v\n%s", err, summary(get(t, ns, "watched")))
			}
			if err := c.fault(ctx, ns, steady.Status.Primary); err != nil {
				t.Fatal(err)
			}
			// Leave Steady first, or see the primary's pod replaced: the wait below must not
			// pass on the status from before the fault.
			waitFor(t, ns, "watched", time.Minute, "the primary seen gone", func(vc *v1alpha1.ValkeyCluster) bool {
				for _, node := range vc.Status.Nodes {
					if node.Pod == steady.Status.Primary && (!node.Ready || node.Role != v1alpha1.NodeRolePrimary) {
						return true
					}
				}
				return vc.Status.State != v1alpha1.StateSteady
			})
			after := waitFor(t, ns, "watched", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
			deadline := time.Now().Add(time.Minute)
			var err error
			for {
				if err = setAndWait(ctx, app, "after-", 10, 1); err == nil || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if err != nil {
				t.Fatalf("no WAIT-acknowledged write through the sentinels after the %s: %v\n%s", c.name, err, summary(get(t, ns, "watched")))
			}
			for i := 0; i < n; i++ {
				key := fmt.Sprintf("before-%d", i)
				if v, err := app.Do(ctx, app.B().Get().Key(key).Build()).ToString(); err != nil || v != "v" {
					t.Fatalf("WAIT-acknowledged %s lost: %q, %v\n%s", key, v, err, summary(after))
				}
			}
			everyNodeHolds(t, ns, pass, "before-", n)
			t.Logf("primary %s -> %s; history:\n%s", steady.Status.Primary, after.Status.Primary, summary(after))
		})
	}
}

// sentinelClient is an application's Sentinel-aware client (valkey-go), given the sentinels'
// Service and the application password.
func sentinelClient(t *testing.T, ns, pass string) vk.Client {
	t.Helper()
	app, err := vk.NewClient(vk.ClientOption{
		InitAddress: []string{net.JoinHostPort(sentinelServiceIP(t, ns, "watched"), strconv.Itoa(valkey.SentinelPort))},
		Password:    pass, DisableCache: true, Dialer: net.Dialer{Timeout: 2 * time.Second},
		Sentinel: vk.SentinelOption{MasterSet: valkey.SentinelGroup, Password: pass, TopologyRefreshInterval: time.Second},
	})
	if err != nil {
		t.Fatalf("a Sentinel-aware client: %v", err)
	}
	t.Cleanup(app.Close)
	return app
}

// everyNodeHolds waits until every data node, asked directly as an application (a replica
// answers reads), holds keys prefix0 .. prefix<n-1>: no node synced from one that lacked them.
func everyNodeHolds(t *testing.T, ns, pass, prefix string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var missing string
		vc := get(t, ns, "watched")
		for _, node := range vc.Status.Nodes {
			if missing != "" {
				break
			}
			// A node that came back stays closed to the application (its user off, WRONGPASS)
			// until the operator opens it, which may be after the cluster reads Steady again.
			c, err := dialApp(net.JoinHostPort(node.IP, "6379"), pass)
			if err != nil {
				missing = fmt.Sprintf("%s does not take the application: %v", node.Pod, err)
				break
			}
			for i := 0; i < n && missing == ""; i++ {
				key := fmt.Sprintf("%s%d", prefix, i)
				if v, err := c.Do(ctxFor(t, 5*time.Second), c.B().Get().Key(key).Build()).ToString(); err != nil || v != "v" {
					missing = fmt.Sprintf("%s lacks %s (%q, %v)", node.Pod, key, v, err)
				}
			}
			c.Close()
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s\n%s", missing, summary(vc))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// sentinelGauges waits until the operator's scrape says the cluster runs sentinels, of which
// answering answer and naming name the recorded primary, then checks that every sentinel
// metric the chart's alerts and dashboard query is in the scrape.
func sentinelGauges(t *testing.T, addr, token, ns string, sentinels, answering, naming float64) {
	t.Helper()
	mine := []string{"namespace", ns, "cluster", "watched"}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		s := scrapeMetrics(t, addr, token)
		got := []float64{-1, -1, -1}
		for i, name := range []string{"valkey_operator_sentinels", "valkey_operator_sentinels_answering", "valkey_operator_sentinels_naming_primary"} {
			if v := s.of(name, mine...); len(v) == 1 {
				got[i] = float64(v[0].Value)
			}
		}
		if got[0] == sentinels && got[1] == answering && got[2] == naming {
			checkQueriedMetrics(t, s, func(name string) bool { return strings.HasPrefix(name, "valkey_operator_sentinels") })
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sentinel gauges %v, want %v, %v, %v", got, sentinels, answering, naming)
		}
	}
}
