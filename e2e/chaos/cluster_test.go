package chaos

import (
	"context"
	"errors"
	"fmt"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"io"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/internal/resp"
)

// pods is the size of the ValkeyCluster under test: one primary, two replicas.
const pods = 3

// harness runs schedules against the ValkeyClusters of one namespace, one per profile, each
// created on first use and reused by later schedules while it is healthy.
type harness struct {
	t        *testing.T
	ns       string
	op       *operatorProc
	opIP     netip.Addr
	clientIP netip.Addr
	log      io.Writer
	clusters map[string]*managed
	stats    *stats

	// Topology Cluster (TestChaosCluster, shards > 0): the schedule's faults and writes are on
	// one shard, its keys carry a hash tag of a slot that shard serves.
	shards int32
	shard  int
	tag    string
	slot   int
	// Topology Sentinel (TestChaosSentinel): the writer finds the primary through the
	// sentinels, the menu has the sentinels' faults, and settling includes the sentinels'.
	sentinel bool

	// The faults in force during a schedule, undone by heal.
	mu      sync.Mutex
	paused  map[string]string // pod to its frozen container
	stopped map[string]bool   // nodes
	timers  []*time.Timer
	hits    []nodeHit
}

// managed is the ValkeyCluster of one profile; a broken one is replaced by gen+1.
type managed struct {
	profile v1alpha1.Profile
	shards  int32 // topology Cluster when > 0
	// sentinel: topology Sentinel.
	sentinel bool
	base     string
	gen      int
	name     string
}

// nodeHit is a fault that hit a node: it was killed, paused, cut off, deleted, moved, powered
// off or wiped. lost says its data went with it (an empty restart; with the Cache profile,
// any restart of its process).
type nodeHit struct {
	pod  string
	at   time.Time
	lost bool
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.log, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func ctxFor(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

func (h *harness) get(name string) (*v1alpha1.ValkeyCluster, error) {
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	var vc v1alpha1.ValkeyCluster
	err := k.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &vc)
	return &vc, err
}

func (h *harness) create(m *managed) error {
	m.gen++
	m.name = fmt.Sprintf("%s-%d", m.base, m.gen)
	if m.sentinel {
		return h.createSentinel(m)
	}
	vc := &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: m.name},
		Spec:       v1alpha1.ValkeyClusterSpec{Topology: v1alpha1.TopologyReplication, Replicas: pods, Profile: m.profile},
	}
	if m.shards > 0 {
		vc.Spec.Topology, vc.Spec.Shards = v1alpha1.TopologyCluster, m.shards
	}
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	h.logf("creating ValkeyCluster %s/%s (profile %s)", h.ns, m.name, m.profile)
	return k.Create(ctx, vc)
}

// ensure returns a healthy cluster of the profile: the one the last schedule left if it is
// healthy, a new one otherwise.
func (h *harness) ensure(profile v1alpha1.Profile) (*v1alpha1.ValkeyCluster, error) {
	return h.ensureNamed(strings.ToLower(string(profile)), profile)
}

// ensureSharded is ensure for the Cluster topology of TestChaosCluster.
func (h *harness) ensureSharded(profile v1alpha1.Profile) (*v1alpha1.ValkeyCluster, error) {
	if h.clusters[clusterBase] == nil {
		h.clusters[clusterBase] = &managed{profile: profile, base: clusterBase, shards: h.shards}
	}
	return h.ensureNamed(clusterBase, profile)
}

// ensureSentinel is ensure for the Sentinel topology of TestChaosSentinel.
func (h *harness) ensureSentinel(profile v1alpha1.Profile) (*v1alpha1.ValkeyCluster, error) {
	if h.clusters[sentinelBase] == nil {
		h.clusters[sentinelBase] = &managed{profile: profile, base: sentinelBase, sentinel: true}
	}
	return h.ensureNamed(sentinelBase, profile)
}

// ensureNamed is ensure for the cluster named base-<n>.
func (h *harness) ensureNamed(base string, profile v1alpha1.Profile) (*v1alpha1.ValkeyCluster, error) {
	m := h.clusters[base]
	if m == nil || m.name == "" {
		if m == nil {
			m = &managed{profile: profile, base: base}
			h.clusters[base] = m
		}
		if err := h.create(m); err != nil {
			return nil, err
		}
		return h.waitHealthy(m.name, 3*time.Minute)
	}
	vc, err := h.waitHealthy(m.name, 90*time.Second)
	if err == nil {
		return vc, nil
	}
	h.logf("ValkeyCluster %s is not healthy (%v): replacing it", m.name, err)
	h.stats.add(&h.stats.recreated, 1)
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	_ = k.Delete(ctx, &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: m.name}})
	if err := h.create(m); err != nil {
		return nil, err
	}
	return h.waitHealthy(m.name, 3*time.Minute)
}

// steady is the converged shape of the status: Steady, the spec observed, every pod ready,
// one primary and the rest replicas, no switchover pending.
func steady(vc *v1alpha1.ValkeyCluster) bool {
	if sharded(vc) {
		return steadyShards(vc)
	}
	primaries, replicas := 0, 0
	for _, n := range vc.Status.Nodes {
		switch n.Role {
		case v1alpha1.NodeRolePrimary:
			primaries++
		case v1alpha1.NodeRoleReplica:
			replicas++
		}
	}
	return vc.Status.State == v1alpha1.StateSteady && vc.Status.ObservedGeneration == vc.Generation &&
		vc.Status.ReadyNodes == fmt.Sprintf("%d/%d", pods, pods) && vc.Status.Primary != "" &&
		len(vc.Status.Nodes) == pods && primaries == 1 && replicas == pods-1 &&
		vc.Annotations[v1beta1.AnnotationSwitchoverTo] == ""
}

// podsAtRevision reports whether every pod exists once and runs the StatefulSet's current
// template revision: no roll is pending.
func (h *harness) podsAtRevision(vc *v1alpha1.ValkeyCluster) (bool, string) {
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	var sts appsv1.StatefulSet
	set := kube.NamesOf(valkeyapi.HubOf(vc)).StatefulSet
	if sharded(vc) {
		set = kube.NamesOf(valkeyapi.HubOf(vc)).ShardSet(0) // every shard's template has the spec's revision
	}
	if err := k.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: set}, &sts); err != nil {
		return false, err.Error()
	}
	want := sts.Spec.Template.Annotations[kube.AnnotationRevision]
	var list corev1.PodList
	if err := k.List(ctx, &list, client.InNamespace(h.ns), client.MatchingLabels(kube.SelectorLabels(valkeyapi.HubOf(vc)))); err != nil {
		return false, err.Error()
	}
	n := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			return false, p.Name + " terminating"
		}
		if got := p.Annotations[kube.AnnotationRevision]; got != want {
			return false, fmt.Sprintf("%s at revision %s, want %s", p.Name, got, want)
		}
		n++
	}
	if n != podCount(vc) {
		return false, fmt.Sprintf("%d pods", n)
	}
	return true, ""
}

// waitConverged waits until the status is steady and no roll is pending.
func (h *harness) waitConverged(name string, timeout time.Duration) (*v1alpha1.ValkeyCluster, error) {
	deadline := time.Now().Add(timeout)
	var vc *v1alpha1.ValkeyCluster
	why := ""
	for {
		var err error
		if vc, err = h.get(name); err == nil {
			if steady(vc) {
				ok, w := h.podsAtRevision(vc)
				if ok {
					return vc, nil
				}
				why = w
			} else {
				why = "status not steady"
			}
		} else {
			why = err.Error()
		}
		if time.Now().After(deadline) {
			return vc, fmt.Errorf("not converged within %s (%s)", timeout, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitHealthy waits until the cluster is converged, its nodes agree with its status, the
// replicas have caught up and a write through the client Service succeeds.
func (h *harness) waitHealthy(name string, timeout time.Duration) (*v1alpha1.ValkeyCluster, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if err := h.op.exited(); err != nil {
			return nil, err
		}
		vc, err := h.waitConverged(name, time.Until(deadline))
		if err != nil {
			return vc, err
		}
		if v := h.checkNodes(vc); len(v) > 0 {
			last = errors.New(v[0].String())
			time.Sleep(time.Second)
			continue
		}
		if err := h.probeWrite(vc); err != nil {
			last = err
			time.Sleep(time.Second)
			continue
		}
		return vc, nil
	}
	return nil, fmt.Errorf("not healthy within %s: %v", timeout, last)
}

// probeWrite writes one key through the client Service.
func (h *harness) probeWrite(vc *v1alpha1.ValkeyCluster) error {
	pass, err := h.secret(vc, kube.KeyClientPassword)
	if err != nil {
		return err
	}
	if sharded(vc) {
		return h.probeShards(vc, pass)
	}
	addr, err := h.clientAddr(vc)
	if err != nil {
		return err
	}
	c, err := resp.Dial(addr, h.clientIP, "", pass, 2*time.Second)
	if err != nil {
		return fmt.Errorf("client Service: %w", err)
	}
	defer func() { _ = c.Close() }()
	_, err = c.Do(2*time.Second, "SET", "chaos:probe", "1")
	return err
}

func (h *harness) secret(vc *v1alpha1.ValkeyCluster, key string) (string, error) {
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	var s corev1.Secret
	if err := k.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: kube.NamesOf(valkeyapi.HubOf(vc)).Auth}, &s); err != nil {
		return "", err
	}
	return string(s.Data[key]), nil
}

func (h *harness) clientAddr(vc *v1alpha1.ValkeyCluster) (string, error) {
	if sharded(vc) {
		// Cluster mode: the schedule's keys live in one slot, on the primary serving it.
		return h.slotOwner(vc)
	}
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	var svc corev1.Service
	if err := k.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: kube.NamesOf(valkeyapi.HubOf(vc)).Client}, &svc); err != nil {
		return "", err
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, "6379"), nil
}

// pod is the pod of an ordinal: of the schedule's shard in topology Cluster.
func (h *harness) pod(vc *v1alpha1.ValkeyCluster, ordinal int) string {
	if sharded(vc) {
		return kube.NamesOf(valkeyapi.HubOf(vc)).PodName(h.shard, ordinal)
	}
	return podName(vc, ordinal)
}

// podName is the pod of an ordinal.
func podName(vc *v1alpha1.ValkeyCluster, ordinal int) string {
	return fmt.Sprintf("%s-%d", kube.NamesOf(valkeyapi.HubOf(vc)).StatefulSet, ordinal)
}

// nodeInfo is what a node says about itself (INFO replication), asked directly at its pod IP.
type nodeInfo struct {
	pod, ip    string
	role       string // master, slave
	masterHost string
	linkUp     bool
	offset     int64
	replID     string
	replID2    string
	offset2    string // second_repl_offset
	runID      string
	err        error
}

func (n nodeInfo) String() string {
	if n.err != nil {
		return fmt.Sprintf("%s (%s): %v", n.pod, n.ip, n.err)
	}
	return fmt.Sprintf("%s (%s): role=%s master=%s link=%v offset=%d replid=%.8s replid2=%.8s second_offset=%s run=%.8s",
		n.pod, n.ip, n.role, n.masterHost, n.linkUp, n.offset, n.replID, n.replID2, n.offset2, n.runID)
}

// survey asks every pod of the cluster for its replication state, as the operator's user.
func (h *harness) survey(vc *v1alpha1.ValkeyCluster) ([]nodeInfo, error) {
	pass, err := h.secret(vc, kube.KeyOperatorPassword)
	if err != nil {
		return nil, err
	}
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	var list corev1.PodList
	if err := k.List(ctx, &list, client.InNamespace(h.ns), client.MatchingLabels(kube.SelectorLabels(valkeyapi.HubOf(vc)))); err != nil {
		return nil, err
	}
	out := make([]nodeInfo, len(list.Items))
	var wg sync.WaitGroup
	for i, p := range list.Items {
		out[i] = nodeInfo{pod: p.Name, ip: p.Status.PodIP}
		if p.Status.PodIP == "" {
			out[i].err = errors.New("no pod IP")
			continue
		}
		wg.Add(1)
		go func(n *nodeInfo) {
			defer wg.Done()
			n.err = infoReplication(n, pass)
		}(&out[i])
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].pod < out[j].pod })
	return out, nil
}

func infoReplication(n *nodeInfo, pass string) error {
	c, err := resp.Dial(net.JoinHostPort(n.ip, "6379"), netip.Addr{}, "operator", pass, 2*time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	v, err := c.Do(2*time.Second, "INFO", "server", "replication")
	if err != nil {
		return err
	}
	text, _ := v.(string)
	info := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			info[k] = v
		}
	}
	n.role = info["role"]
	n.masterHost = info["master_host"]
	n.linkUp = info["master_link_status"] == "up"
	n.offset, _ = strconv.ParseInt(info["master_repl_offset"], 10, 64)
	n.replID, n.replID2, n.offset2, n.runID = info["master_replid"], info["master_replid2"], info["second_repl_offset"], info["run_id"]
	return nil
}

// nodesReport is what every node says about itself, for violations.
func (h *harness) nodesReport(vc *v1alpha1.ValkeyCluster) string {
	infos, err := h.survey(vc)
	if err != nil {
		return "survey: " + err.Error()
	}
	var b strings.Builder
	for _, n := range infos {
		fmt.Fprintf(&b, "    %s\n", n)
	}
	return b.String()
}

// summary is the cluster's status in a few lines, for violations and logs.
func summary(vc *v1alpha1.ValkeyCluster) string {
	if vc == nil {
		return "(no ValkeyCluster)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: state=%s ready=%s primary=%s gen=%d observed=%d\n", vc.Name, vc.Status.State, vc.Status.ReadyNodes, vc.Status.Primary, vc.Generation, vc.Status.ObservedGeneration)
	for _, n := range vc.Status.Nodes {
		fmt.Fprintf(&b, "    node %s ip=%s role=%s offset=%d lag=%d ready=%v\n", n.Pod, n.IP, n.Role, n.ReplicationOffset, n.Lag, n.Ready)
	}
	h := vc.Status.History
	if len(h) > 8 {
		h = h[len(h)-8:]
	}
	for _, e := range h {
		fmt.Fprintf(&b, "    #%d %s -> %s %s: %s\n", e.Seq, e.From, e.To, e.Event, e.Message)
	}
	return b.String()
}
