package operatorsuite

import (
	"context"
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestConfigChangeRollsEveryPodWithoutLosingWrites changes a directive that needs a restart:
// the operator restarts the replicas one at a time, hands the primary role over, restarts the
// old primary, and a client writing all along loses no acknowledged write.
func TestConfigChangeRollsEveryPodWithoutLosingWrites(t *testing.T) {
	ns, ctx, vc := steadyReplication(t, "roll", 5*time.Minute)
	c := writable(t, vc)
	before := podRevisions(t, ns)

	// A client writing all along through the client Service (reconnecting through failures).
	w := startWriter(ctx, c, "roll")

	vc = get(t, ns, "roll")
	// databases takes effect only at start: a new revision, rolled.
	vc.Spec.Config = map[string]v1alpha1.ConfigValue{"databases": "32"}
	update(t, ctx, vc)
	vc = waitFor(t, ns, "roll", 3*time.Minute, "rolled and Steady", everyPodRestarted(t, ns, before, 3))
	sawRolling := false
	for _, h := range vc.Status.History {
		sawRolling = sawRolling || h.To == v1alpha1.StateRolling
	}
	if !sawRolling {
		t.Fatalf("history shows no Rolling:\n%s", summary(vc))
	}
	lost, acked := w.lost(t, writable(t, vc))
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost in a rolling restart:\n%s", lost, acked, summary(vc))
	}
	t.Logf("rolling restart done; %d writes acknowledged, none lost, %d failed and retried", acked, w.failures.Load())
}

func podRevisions(t *testing.T, ns string) map[string]string {
	t.Helper()
	var pods corev1.PodList
	if err := k.List(ctxFor(t, 10*time.Second), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = string(p.UID) + "/" + p.Annotations[kube.AnnotationRevision]
		}
	}
	return out
}

// everyPodRestarted is a converged cluster of n pods none of which is the pod (UID and
// revision) it was in before.
func everyPodRestarted(t *testing.T, ns string, before map[string]string, n int) func(*v1alpha1.ValkeyCluster) bool {
	return func(vc *v1alpha1.ValkeyCluster) bool {
		if !steadyWith(n)(vc) {
			return false
		}
		after := podRevisions(t, ns)
		for pod, rev := range after {
			if rev == before[pod] {
				return false
			}
		}
		return len(after) == n
	}
}

// TestLiveConfigChangeRestartsNothing: a directive Valkey applies at run time (here
// slowlog-max-len and maxmemory-samples) is set on every running process with CONFIG SET: no pod
// restarts, no Rolling in history, and every node reports the new values.
func TestLiveConfigChangeRestartsNothing(t *testing.T) {
	ns, ctx, vc := steadyReplication(t, "live", 3*time.Minute)
	before := podRevisions(t, ns)
	runIDs := map[string]string{}
	for _, n := range vc.Status.Nodes {
		runIDs[n.Pod] = nodeInfo(t, vc, n.IP, "server")["run_id"]
	}
	vc.Spec.Config = map[string]v1alpha1.ConfigValue{"slowlog-max-len": "321", "maxmemory-samples": "7"}
	update(t, ctx, vc)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range get(t, ns, "live").Status.Nodes {
			if configOf(t, vc, n.IP, "slowlog-max-len") != "321" || configOf(t, vc, n.IP, "maxmemory-samples") != "7" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("not every node has the new values: %v", err)
	}
	vc = get(t, ns, "live")
	for _, n := range vc.Status.Nodes {
		if got := nodeInfo(t, vc, n.IP, "server")["run_id"]; got != runIDs[n.Pod] {
			t.Fatalf("%s restarted (run id %s, was %s) for a live directive", n.Pod, got, runIDs[n.Pod])
		}
	}
	if after := podRevisions(t, ns); !maps.Equal(before, after) {
		t.Fatalf("pods or their revisions changed: %v -> %v", before, after)
	}
	for _, h := range vc.Status.History {
		if h.To == v1alpha1.StateRolling {
			t.Fatalf("a live directive started a roll:\n%s", summary(vc))
		}
	}
	// A value Valkey refuses: status says so with Valkey's error, the old value stays, and it
	// is not remembered as applied: the next change of the spec is tried again.
	vc.Spec.Config = map[string]v1alpha1.ConfigValue{"slowlog-max-len": "321", "maxmemory-samples": "0"}
	update(t, ctx, vc)
	vc = waitFor(t, ns, "live", 30*time.Second, "status.waiting says CONFIG SET was refused", func(vc *v1alpha1.ValkeyCluster) bool {
		return strings.Contains(vc.Status.Waiting, "refused CONFIG SET") && strings.Contains(vc.Status.Waiting, "maxmemory-samples")
	})
	t.Logf("refused: %s", vc.Status.Waiting)
	for _, n := range vc.Status.Nodes {
		if got := configOf(t, vc, n.IP, "maxmemory-samples"); got != "7" {
			t.Fatalf("%s has maxmemory-samples %q after a refused change, want the old 7", n.Pod, got)
		}
	}
	vc.Spec.Config = map[string]v1alpha1.ConfigValue{"slowlog-max-len": "321", "maxmemory-samples": "9"}
	update(t, ctx, vc)
	vc = waitFor(t, ns, "live", 30*time.Second, "the corrected value applied, the refusal gone", func(vc *v1alpha1.ValkeyCluster) bool {
		return !strings.Contains(vc.Status.Waiting, "refused")
	})
	for _, n := range vc.Status.Nodes {
		if got := configOf(t, vc, n.IP, "maxmemory-samples"); got != "9" {
			t.Fatalf("%s has maxmemory-samples %q, want 9 after the spec was corrected", n.Pod, got)
		}
	}
}

// configOf reads one directive from a node as the operator's user.
func configOf(t *testing.T, vc *v1alpha1.ValkeyCluster, ip, name string) string {
	t.Helper()
	c := operatorClient(t, vc, ip)
	defer c.Close()
	m, err := c.Do(context.Background(), c.B().ConfigGet().Parameter(name).Build()).AsStrMap()
	if err != nil {
		t.Fatalf("CONFIG GET %s on %s: %v", name, ip, err)
	}
	return m[name]
}

// nodeInfo reads an INFO section from a node as the operator's user.
func nodeInfo(t *testing.T, vc *v1alpha1.ValkeyCluster, ip, section string) map[string]string {
	t.Helper()
	c := operatorClient(t, vc, ip)
	defer c.Close()
	return infoFrom(t, c, section)
}

// infoFrom reads an INFO section through c.
func infoFrom(t *testing.T, c vk.Client, section string) map[string]string {
	t.Helper()
	text, err := c.Do(context.Background(), c.B().Info().Section(section).Build()).ToString()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}

// TestAMemoryLimitChangeTakesEffectPodByPodWithTheRoll: maxmemory derived from the memory
// limit follows each pod's own limit. Raising the limit rolls the pods; at every moment of the
// roll, every answering node's maxmemory is at most 60% of the limit of the pod it runs in (a
// live CONFIG SET on every node at once, as the operator did before, put the new value on
// pods still running under the old limit), and at the end every node has the new value.
func TestAMemoryLimitChangeTakesEffectPodByPodWithTheRoll(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 5*time.Minute)
	vc := newCluster(ns, "mem", v1alpha1.TopologyReplication, 3)
	vc.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "mem", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	for _, n := range vc.Status.Nodes {
		if got := configOf(t, vc, n.IP, "maxmemory"); got != "62914560" {
			t.Fatalf("%s: maxmemory %s, want 60%% of 100Mi (62914560)", n.Pod, got)
		}
	}
	before := podRevisions(t, ns)
	vc.Spec.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("200Mi")
	update(t, ctx, vc)
	pw := secretKey(t, vc, kube.KeyOperatorPassword)
	samples := 0
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := k.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
				continue
			}
			limit := p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
			got, ok := maxmemoryOf(ctx, p.Status.PodIP, pw)
			var again corev1.Pod
			if !ok || k.Get(ctx, client.ObjectKeyFromObject(&p), &again) != nil || again.UID != p.UID {
				continue // restarting, or replaced between the two looks
			}
			samples++
			if want, _ := v1beta1.MaxMemoryBytes(limit); got > want {
				return false, fmt.Errorf("%s runs under a %s limit with maxmemory %d (more than %d)", p.Name, limit.String(), got, want)
			}
		}
		cur := get(t, ns, "mem")
		return everyPodRestarted(t, ns, before, 3)(cur), nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, summary(get(t, ns, "mem")))
	}
	vc = get(t, ns, "mem")
	for _, n := range vc.Status.Nodes {
		if got := configOf(t, vc, n.IP, "maxmemory"); got != "125829120" {
			t.Fatalf("%s: maxmemory %s after the roll, want 60%% of 200Mi (125829120)", n.Pod, got)
		}
	}
	t.Logf("rolled; %d samples of maxmemory against each pod's own limit during the roll", samples)
}

// maxmemoryOf reads maxmemory from the node at ip as the operator's user (password pw), false
// when it does not answer (a pod restarting in the roll).
func maxmemoryOf(ctx context.Context, ip, pw string) (int64, bool) {
	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{ip + ":6379"}, Username: "operator", Password: pw,
		DisableCache: true, Dialer: net.Dialer{Timeout: time.Second}, ForceSingleClient: true, DisableRetry: true})
	if err != nil {
		return 0, false
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	m, err := c.Do(ctx, c.B().ConfigGet().Parameter("maxmemory").Build()).AsStrMap()
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(m["maxmemory"], 10, 64)
	return v, err == nil
}
