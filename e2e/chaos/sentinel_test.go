package chaos

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/internal/resp"
	"github.com/valkey-fsm/valkey-operator/machine/sim"
)

// The Sentinel topology's schedule: the replication group's faults, and the sentinels' own.
const (
	// sentinelBase names the Sentinel topology under test.
	sentinelBase = "sentinel"
	// sentinels is its sentinel count (quorum 2).
	sentinels = 3
	// sentinelContainer is the sentinel pods' container.
	sentinelContainer = "sentinel"
	// sentinelDownAfter is how long the sentinels wait before they call a primary down (the
	// smallest the API allows): a schedule's faults last long enough to outlast it.
	sentinelDownAfter = 5 * time.Second
)

// TestChaosSentinel draws fault schedules as TestChaos does and plays each against a real
// Sentinel topology (a primary, two replicas and three sentinels; Durable), created as
// v1beta1, while a Sentinel-aware client writes: after every reconnection it asks a sentinel
// where the primary is (SENTINEL GET-MASTER-ADDR-BY-NAME, as client libraries do), with the
// application password. Besides the data nodes' faults, the menu kills, freezes and renews
// sentinels (a renewed one comes back on a new volume: a new id, monitoring nothing). After
// the heal the cluster must settle as a replication group does, and every sentinel must name
// the recorded primary, list exactly the other nodes as its replicas and know exactly the
// other sentinels; the writes, the canary, the history and the conditions are checked as for
// a replication group.
func TestChaosSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos against real processes takes minutes")
	}
	h := newHarness(t)
	h.sentinel = true
	drawnKinds := onlyKinds(t, sentinelMenu)
	h.check(t, " (sentinel)", 2, 4, func(rt *rapid.T, minSteps, maxSteps int) schedule {
		return scheduleGen([]v1alpha1.Profile{v1alpha1.ProfileDurable}, drawnKinds, minSteps, maxSteps).Draw(rt, "schedule")
	})
}

// sentinelMenu is the replication group's menu and the sentinels' faults, as the simulator
// draws them for this topology.
var sentinelMenu = append(append([]sim.FaultKind(nil), replicationMenu...),
	sim.FaultKillSentinel, sim.FaultPauseSentinel, sim.FaultRenewSentinel)

// createSentinel makes the Sentinel topology as a v1beta1 object: v1alpha1 has no such
// topology.
func (h *harness) createSentinel(m *managed) error {
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: m.name}, Spec: v1beta1.ValkeyClusterSpec{
		Topology: v1beta1.TopologySentinel, Replicas: ptr.To(int32(pods - 1)), Profile: v1beta1.Profile(m.profile),
		Sentinel: &v1beta1.SentinelSpec{Replicas: sentinels, DownAfter: &metav1.Duration{Duration: sentinelDownAfter}},
	}}
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	h.logf("creating ValkeyCluster %s/%s (topology Sentinel, profile %s)", h.ns, m.name, m.profile)
	return k.Create(ctx, vc)
}

// sentinelPods are the cluster's sentinel pods by name, with their addresses ("" while a pod
// has none).
func (h *harness) sentinelPods(name string) (map[string]string, error) {
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	var list corev1.PodList
	labels := kube.SentinelSelectorLabels(&v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}})
	if err := k.List(ctx, &list, client.InNamespace(h.ns), client.MatchingLabels(labels)); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range list.Items {
		out[p.Name] = p.Status.PodIP
	}
	return out, nil
}

// sentinelPod is the pod of sentinel ordinal i.
func sentinelPod(name string, i int) string {
	return kube.SentinelSetName(&v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}) + "-" + strconv.Itoa(i)
}

// askSentinel sends one command to the sentinel at ip as the application does: from the
// client's address, with the application password.
func (h *harness) askSentinel(ip, pass string, args ...string) (any, error) {
	c, err := resp.Dial(net.JoinHostPort(ip, strconv.Itoa(valkey.SentinelPort)), h.clientIP, "", pass, writeTimeout)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	return c.Do(2*writeTimeout, args...)
}

// sentinelResolver is a Sentinel client's discovery: the sentinels in turn, the first that
// names a primary wins.
func (h *harness) sentinelResolver(name, pass string) func() (string, error) {
	next := 0
	return func() (string, error) {
		byPod, err := h.sentinelPods(name)
		if err != nil {
			return "", err
		}
		var ips []string
		for _, ip := range byPod {
			if ip != "" {
				ips = append(ips, ip)
			}
		}
		slices.Sort(ips)
		if len(ips) == 0 {
			return "", fmt.Errorf("no sentinel of %s has an address", name)
		}
		next++
		var last error
		for i := range ips {
			ip := ips[(next+i)%len(ips)]
			v, err := h.askSentinel(ip, pass, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", valkey.SentinelGroup)
			if err != nil {
				last = fmt.Errorf("sentinel %s: %w", ip, err)
				continue
			}
			if a, ok := v.([]any); ok && len(a) == 2 {
				host, _ := a[0].(string)
				port, _ := a[1].(string)
				return net.JoinHostPort(host, port), nil
			}
			last = fmt.Errorf("sentinel %s names no primary: %v", ip, v)
		}
		return "", last
	}
}

// applySentinel plays a sentinel fault.
func (h *harness) applySentinel(name string, f sim.Fault) (string, error) {
	pod := sentinelPod(name, f.Sentinel)
	switch f.Kind {
	case sim.FaultKillSentinel:
		if err := cl.KillContainer(h.ns, pod, sentinelContainer); err != nil {
			return "", err
		}
		return "SIGKILL " + pod, nil
	case sim.FaultPauseSentinel:
		if err := cl.PauseContainer(h.ns, pod, sentinelContainer); err != nil {
			return "", err
		}
		h.mu.Lock()
		h.paused[pod] = sentinelContainer
		h.timers = append(h.timers, time.AfterFunc(time.Duration(f.Ticks)*time.Second, func() { h.resume(pod) }))
		h.mu.Unlock()
		return fmt.Sprintf("froze %s for %ds", pod, f.Ticks), nil
	case sim.FaultRenewSentinel:
		// The claim first: it goes once the pod has, and the StatefulSet makes the new pod a
		// new one, as after the loss of a node with local storage.
		ctx, cancel := ctxFor(2 * time.Minute)
		defer cancel()
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "sentinel-" + pod}}
		if err := k.Delete(ctx, claim); err != nil {
			return "", err
		}
		if err := cl.DeletePod(ctx, h.ns, pod); err != nil {
			return "", err
		}
		return fmt.Sprintf("deleted %s with its claim %s", pod, claim.Name), nil
	}
	return "", fmt.Errorf("fault kind %s is not a sentinel fault", f.Kind)
}

// checkSentinels: every sentinel names the primary status records (at primaryIP), lists
// exactly the other nodes (replicaIPs) as its replicas, and knows exactly the other sentinels
// (by address; a renewed sentinel's old id must have been forgotten).
func (h *harness) checkSentinels(vc *v1alpha1.ValkeyCluster, primaryIP string, replicaIPs []string) []violation {
	pass, err := h.secret(vc, kube.KeyClientPassword)
	if err != nil {
		return []violation{{vSentinels, err.Error()}}
	}
	byPod, err := h.sentinelPods(vc.Name)
	if err != nil {
		return []violation{{vSentinels, err.Error()}}
	}
	if len(byPod) != sentinels {
		return []violation{{vSentinels, fmt.Sprintf("%d sentinel pods, want %d", len(byPod), sentinels)}}
	}
	slices.Sort(replicaIPs)
	var out []violation
	for pod, ip := range byPod {
		if ip == "" {
			out = append(out, violation{vSentinels, pod + " has no address"})
			continue
		}
		var others []string
		for p, o := range byPod {
			if p != pod {
				others = append(others, o)
			}
		}
		slices.Sort(others)
		if why := h.sentinelDiffers(ip, pass, primaryIP, replicaIPs, others); why != "" {
			out = append(out, violation{vSentinels, fmt.Sprintf("%s (%s): %s", pod, ip, why)})
		}
	}
	return out
}

// sentinelDiffers says how the sentinel at ip differs from the world it should monitor ("" when
// it does not).
func (h *harness) sentinelDiffers(ip, pass, primaryIP string, replicaIPs, sentinelIPs []string) string {
	m, err := h.sentinelTable(ip, pass, "MASTER")
	if err != nil {
		return err.Error()
	}
	if len(m) != 1 || m[0]["ip"] != primaryIP {
		return fmt.Sprintf("names %v as the primary, status records %s", m, primaryIP)
	}
	for _, what := range []struct {
		cmd  string
		want []string
	}{{"REPLICAS", replicaIPs}, {"SENTINELS", sentinelIPs}} {
		rows, err := h.sentinelTable(ip, pass, what.cmd)
		if err != nil {
			return err.Error()
		}
		var got []string
		for _, r := range rows {
			got = append(got, r["ip"])
		}
		slices.Sort(got)
		if !slices.Equal(got, what.want) {
			return fmt.Sprintf("SENTINEL %s lists %v, want %v", what.cmd, got, what.want)
		}
	}
	return ""
}

// sentinelTable is SENTINEL <cmd> mymaster as rows of fields (MASTER gives one row).
func (h *harness) sentinelTable(ip, pass, cmd string) ([]map[string]string, error) {
	v, err := h.askSentinel(ip, pass, "SENTINEL", cmd, valkey.SentinelGroup)
	if err != nil {
		return nil, fmt.Errorf("SENTINEL %s: %w", cmd, err)
	}
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("SENTINEL %s answered %T", cmd, v)
	}
	if cmd == "MASTER" {
		a = []any{a}
	}
	var out []map[string]string
	for _, row := range a {
		fields, ok := row.([]any)
		if !ok || len(fields)%2 != 0 {
			return nil, fmt.Errorf("SENTINEL %s: a row of %T", cmd, row)
		}
		m := map[string]string{}
		for i := 0; i < len(fields); i += 2 {
			k, _ := fields[i].(string)
			v, _ := fields[i+1].(string)
			m[k] = v
		}
		out = append(out, m)
	}
	return out, nil
}

// sentinelStepString is how a sentinel fault reads in a schedule.
func sentinelStepString(f sim.Fault) string {
	s := fmt.Sprintf("%s s%d", f.Kind, f.Sentinel)
	if f.Kind == sim.FaultPauseSentinel {
		s += fmt.Sprintf(" for %ds", f.Ticks)
	}
	return s
}

// drawSentinelFault fills in a sentinel fault's sentinel and, for a freeze, how long.
func drawSentinelFault(t *rapid.T, s *step) {
	s.Sentinel = rapid.IntRange(0, sentinels-1).Draw(t, "sentinel")
	if s.Kind == sim.FaultPauseSentinel {
		// Often longer than down-after: the frozen sentinel's view is stale when it thaws.
		s.Ticks = rapid.IntRange(2, 15).Draw(t, "seconds")
	}
}
