package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine/sim"
)

// The menu. Faults are the simulated world's kinds (machine/sim), played against real
// processes; two kinds exist only here: a whole node going down (the local cluster can power
// one off) and a user asking for a rolling restart (in the simulator a user change, not a
// fault), which gives the operator crash a roll to interrupt. The simulator's link-lag,
// api-conflict, actuator-failure, slow-actuator and manual-failover need hooks into the
// operator or the network that a real run does not have (or are left for later).
const (
	faultNodeDown       sim.FaultKind = "node-down"
	faultRollingRestart sim.FaultKind = "rolling-restart"
	// faultReshard (topology Cluster only) asks for the other shard count (chaosShards or one
	// more): a resharding, with its slot migrations, under the faults around it.
	faultReshard sim.FaultKind = "reshard"
)

var menu = []sim.FaultKind{
	sim.FaultKillPrimary, sim.FaultKillNode, sim.FaultPause, sim.FaultPartition, sim.FaultPartitionOperator,
	sim.FaultDeletePod, sim.FaultIPChange, sim.FaultEmptyRestart, faultNodeDown, sim.FaultOperatorCrash,
	faultRollingRestart, sim.FaultHeal, sim.FaultEvictPod,
}

// replicationMenu adds one-way partitions, against which the fence clock's seals are built
// (docs/failover.md, "The fence clock: seals"): a primary whose stream no longer reaches its
// replicas while their acknowledgements still reach it, or the reverse. It is TestChaos's;
// TestChaosCluster keeps the menu its recorded failure (testdata/rapid) was drawn from.
var replicationMenu = append(append([]sim.FaultKind(nil), menu...), sim.FaultPartitionOneWay)

// Moments an operator crash waits for.
const (
	crashAtOnce   = ""
	crashFailover = "failover"
	crashRoll     = "roll"
)

// step is one fault of a schedule and the pause after it.
type step struct {
	sim.Fault
	// During (operator-crash): crash at once; or the step kills the primary and crashes the
	// operator Delay tenths of a second into the failover; or Delay seconds into a rolling
	// restart (requested by the step when none is under way).
	During string
	Delay  int
	// After is how many seconds the schedule waits after the fault.
	After int
}

type schedule struct {
	Profile v1alpha1.Profile
	Steps   []step
	// Shard is the shard the faults hit (topology Cluster).
	Shard int
}

func refString(r sim.NodeRef) string {
	if r.Primary {
		return "primary"
	}
	return fmt.Sprintf("n%d", r.Ordinal)
}

func (s step) String() string {
	f := s.Fault
	var d string
	switch f.Kind {
	case sim.FaultKillPrimary, faultRollingRestart, faultReshard, sim.FaultHeal:
		d = string(f.Kind)
	case sim.FaultPause, faultNodeDown:
		d = fmt.Sprintf("%s %s for %ds", f.Kind, refString(f.Node), f.Ticks)
	case sim.FaultPartition, sim.FaultPartitionOneWay:
		var side []string
		for _, n := range f.Nodes {
			side = append(side, refString(n))
		}
		if f.Operator {
			side = append(side, "operator")
		}
		if f.Client {
			side = append(side, "client")
		}
		switch {
		case f.Kind == sim.FaultPartition:
			d = fmt.Sprintf("partition {%s} | {the rest}", strings.Join(side, ","))
		case f.Outbound:
			d = fmt.Sprintf("partition-one-way {%s} -/-> {the rest}", strings.Join(side, ","))
		default:
			d = fmt.Sprintf("partition-one-way {the rest} -/-> {%s}", strings.Join(side, ","))
		}
	case sim.FaultKillSentinel, sim.FaultPauseSentinel, sim.FaultRenewSentinel:
		d = sentinelStepString(f)
	case sim.FaultOperatorCrash:
		switch s.During {
		case crashFailover:
			d = fmt.Sprintf("kill-primary and operator-crash %dms into the failover", s.Delay*100)
		case crashRoll:
			d = fmt.Sprintf("operator-crash %ds into a rolling restart", s.Delay)
		default:
			d = "operator-crash"
		}
		d += fmt.Sprintf(", down %ds", f.Ticks)
	default:
		d = fmt.Sprintf("%s %s", f.Kind, refString(f.Node))
	}
	return fmt.Sprintf("%s, then %ds", d, s.After)
}

func (s schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "profile %s, %d faults:", s.Profile, len(s.Steps))
	if s.Shard > 0 {
		fmt.Fprintf(&b, " (on shard %d)", s.Shard)
	}
	for i, st := range s.Steps {
		fmt.Fprintf(&b, "\n  %d. %s", i+1, st)
	}
	return b.String()
}

// Generators. rapid shrinks towards the first element of a menu and the low end of a range,
// so the simplest choices come first.

func nodeRefGen() *rapid.Generator[sim.NodeRef] {
	return rapid.Custom(func(t *rapid.T) sim.NodeRef {
		if rapid.Bool().Draw(t, "primary") {
			return sim.NodeRef{Primary: true}
		}
		return sim.NodeRef{Ordinal: rapid.IntRange(0, pods-1).Draw(t, "ordinal")}
	})
}

func stepGen(kinds []sim.FaultKind) *rapid.Generator[step] {
	return rapid.Custom(func(t *rapid.T) step {
		s := step{Fault: sim.Fault{Kind: rapid.SampledFrom(kinds).Draw(t, "kind")}}
		switch s.Kind {
		case sim.FaultKillPrimary, faultRollingRestart, faultReshard, sim.FaultHeal:
		case sim.FaultKillSentinel, sim.FaultPauseSentinel, sim.FaultRenewSentinel:
			drawSentinelFault(t, &s)
		case sim.FaultPartition, sim.FaultPartitionOneWay:
			if s.Kind == sim.FaultPartitionOneWay {
				s.Outbound = rapid.Bool().Draw(t, "outbound")
			}
			if !rapid.Bool().Draw(t, "primary-stays") {
				s.Nodes = append(s.Nodes, sim.NodeRef{Primary: true})
			}
			for _, o := range rapid.SliceOfNDistinct(rapid.IntRange(0, pods-1), 0, 1, rapid.ID[int]).Draw(t, "others") {
				s.Nodes = append(s.Nodes, sim.NodeRef{Ordinal: o})
			}
			if len(s.Nodes) == 0 {
				s.Nodes = []sim.NodeRef{{Primary: true}}
			}
			s.Operator = rapid.Bool().Draw(t, "operator")
			s.Client = rapid.Bool().Draw(t, "client")
		case sim.FaultOperatorCrash:
			s.During = rapid.SampledFrom([]string{crashAtOnce, crashFailover, crashRoll}).Draw(t, "during")
			switch s.During {
			case crashFailover:
				s.Delay = rapid.IntRange(0, 20).Draw(t, "delay") // tenths of a second
			case crashRoll:
				s.Delay = rapid.IntRange(0, 10).Draw(t, "delay") // seconds
			}
			s.Ticks = rapid.IntRange(0, 5).Draw(t, "down")
		default:
			s.Node = nodeRefGen().Draw(t, "node")
			switch s.Kind {
			case sim.FaultPause:
				// Long enough, often, for the operator to fail over while the node is frozen
				// (three failed surveys a second apart, each up to 2 s): it resumes believing
				// it is the primary.
				s.Ticks = rapid.IntRange(2, 15).Draw(t, "seconds")
			case faultNodeDown:
				s.Ticks = rapid.IntRange(2, 10).Draw(t, "seconds")
			}
		}
		s.After = rapid.IntRange(1, 4).Draw(t, "after")
		return s
	})
}

func scheduleGen(profiles []v1alpha1.Profile, kinds []sim.FaultKind, minSteps, maxSteps int) *rapid.Generator[schedule] {
	return rapid.Custom(func(t *rapid.T) schedule {
		return schedule{
			Profile: rapid.SampledFrom(profiles).Draw(t, "profile"),
			Steps:   rapid.SliceOfN(stepGen(kinds), minSteps, maxSteps).Draw(t, "steps"),
		}
	})
}

// Playing faults.

const valkeyContainer = "valkey"

// resolve names the pod a reference means now: the primary is the one status names (the
// operator's view), or ordinal 0 when it names none.
func (h *harness) resolve(name string, r sim.NodeRef) (string, error) {
	vc, err := h.get(name)
	if err != nil {
		return "", err
	}
	if r.Primary {
		if sharded(vc) && h.shard < len(vc.Status.Shards) && vc.Status.Shards[h.shard].Primary != "" {
			return vc.Status.Shards[h.shard].Primary, nil
		}
		if !sharded(vc) && vc.Status.Primary != "" {
			return vc.Status.Primary, nil
		}
		return h.pod(vc, 0), nil
	}
	return h.pod(vc, r.Ordinal), nil
}

func (h *harness) podIP(pod string) (netip.Addr, error) { return cl.PodIP(h.ns, pod) }

// hit records that a fault hit pod, and whether its data was lost. The time is taken after
// the fault acted plus slack for it to take full effect (a process to be really gone): a
// write acknowledged in between counts as acknowledged before the hit, which can only exempt
// more writes, never blame the operator for a loss the faults caused.
func (h *harness) hit(pod string, lost bool, slack time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hits = append(h.hits, nodeHit{pod: pod, at: time.Now().Add(slack), lost: lost})
}

// apply plays one fault against the cluster and says what it did. An error means the fault
// could not be played (its pod was not running, say): the schedule goes on without it.
func (h *harness) apply(name string, profile v1alpha1.Profile, s step) (string, error) {
	ctx, cancel := ctxFor(2 * time.Minute)
	defer cancel()
	f := s.Fault
	if f.Kind.OfSentinels() {
		return h.applySentinel(name, f)
	}
	cache := profile == v1alpha1.ProfileCache
	switch f.Kind {
	case sim.FaultKillPrimary, sim.FaultKillNode:
		ref := f.Node
		if f.Kind == sim.FaultKillPrimary {
			ref = sim.NodeRef{Primary: true}
		}
		pod, err := h.resolve(name, ref)
		if err != nil {
			return "", err
		}
		if err := cl.KillContainer(h.ns, pod, valkeyContainer); err != nil {
			return "", err
		}
		h.hit(pod, cache, time.Second)
		return "SIGKILL " + pod, nil

	case sim.FaultPause:
		pod, err := h.resolve(name, f.Node)
		if err != nil {
			return "", err
		}
		if err := cl.PauseContainer(h.ns, pod, valkeyContainer); err != nil {
			return "", err
		}
		h.hit(pod, false, 0)
		h.mu.Lock()
		h.paused[pod] = valkeyContainer
		h.timers = append(h.timers, time.AfterFunc(time.Duration(f.Ticks)*time.Second, func() { h.resume(pod) }))
		h.mu.Unlock()
		return fmt.Sprintf("froze %s for %ds", pod, f.Ticks), nil

	case sim.FaultPartition, sim.FaultPartitionOneWay:
		return h.partition(name, f)

	case sim.FaultPartitionOperator:
		pod, err := h.resolve(name, f.Node)
		if err != nil {
			return "", err
		}
		ip, err := h.podIP(pod)
		if err != nil {
			return "", err
		}
		if err := cl.Partition(ip, h.opIP); err != nil {
			return "", err
		}
		h.hit(pod, false, 0)
		return fmt.Sprintf("cut %s (%s) from the operator (%s)", pod, ip, h.opIP), nil

	case sim.FaultDeletePod, sim.FaultEvictPod:
		// Both are a deletion with the pod's grace period, as kubectl delete does: the preStop
		// hook holds a primary with a linked replica while the operator hands it over
		// (primary-leaving). The simulator's delete-pod has no hold: here it is evict-pod
		// whenever the pod is such a primary.
		pod, err := h.resolve(name, f.Node)
		if err != nil {
			return "", err
		}
		if err := cl.DeletePod(ctx, h.ns, pod); err != nil {
			return "", err
		}
		h.hit(pod, cache, 15*time.Second) // SIGTERM: a primary waits up to 10 s for its replicas
		return "deleted pod " + pod, nil

	case sim.FaultIPChange:
		pod, err := h.resolve(name, f.Node)
		if err != nil {
			return "", err
		}
		old, err := h.podIP(pod)
		if err != nil {
			return "", err
		}
		cl.SetNewIPOnRecreate(true)
		defer cl.SetNewIPOnRecreate(false)
		if err := cl.DeletePod(ctx, h.ns, pod); err != nil {
			return "", err
		}
		h.hit(pod, cache, 15*time.Second)
		deadline := time.Now().Add(45 * time.Second)
		for time.Now().Before(deadline) {
			if ip, err := h.podIP(pod); err == nil && ip != old {
				return fmt.Sprintf("deleted pod %s; re-created at %s (was %s)", pod, ip, old), nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Sprintf("deleted pod %s (was %s); not re-created within 45s, so it keeps its address", pod, old), nil

	case sim.FaultEmptyRestart:
		pod, err := h.resolve(name, f.Node)
		if err != nil {
			return "", err
		}
		if err := cl.WipeVolumes(ctx, h.ns, pod); err != nil {
			return "", err
		}
		h.hit(pod, true, time.Second)
		return "wiped the volumes of " + pod + " and restarted it", nil

	case faultNodeDown:
		pod, err := h.resolve(name, f.Node)
		if err != nil {
			return "", err
		}
		var p corev1.Pod
		if err := k.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: pod}, &p); err != nil {
			return "", err
		}
		node := p.Spec.NodeName
		if node == "" {
			return "", fmt.Errorf("pod %s is not scheduled", pod)
		}
		var on corev1.PodList
		if err := k.List(ctx, &on, client.InNamespace(h.ns), client.MatchingLabels(map[string]string{kube.LabelCluster: name})); err != nil {
			return "", err
		}
		if err := cl.StopNode(ctx, node); err != nil {
			return "", err
		}
		var victims []string
		for _, q := range on.Items {
			if q.Spec.NodeName == node {
				victims = append(victims, q.Name)
				h.hit(q.Name, cache, time.Second)
			}
		}
		h.mu.Lock()
		h.stopped[node] = true
		h.timers = append(h.timers, time.AfterFunc(time.Duration(f.Ticks)*time.Second, func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.stopped[node] {
				delete(h.stopped, node)
				if err := cl.StartNode(context.Background(), node); err != nil {
					h.logf("starting %s: %v", node, err)
				} else {
					h.logf("started %s", node)
				}
			}
		}))
		h.mu.Unlock()
		return fmt.Sprintf("stopped %s (pods %v) for %ds", node, victims, f.Ticks), nil

	case sim.FaultOperatorCrash:
		return h.crashOperator(name, profile, s)

	case faultRollingRestart:
		if err := h.requestRestart(name); err != nil {
			return "", err
		}
		return "asked for a rolling restart", nil

	case faultReshard:
		return h.reshard(name)

	case sim.FaultHeal:
		h.heal()
		return "healed partitions, resumed paused pods, started stopped nodes", nil
	}
	return "", fmt.Errorf("fault kind %s is not played here", f.Kind)
}

// partition cuts side B (the step's nodes, and the operator and the client when it says so)
// from everything else of the cluster's world: its other pods, the operator, the client.
// Nothing else is exempt or affected: the agent's probes and the API server keep working.
func (h *harness) partition(name string, f sim.Fault) (string, error) {
	vc, err := h.get(name)
	if err != nil {
		return "", err
	}
	inB := map[string]bool{}
	for _, r := range f.Nodes {
		pod, err := h.resolve(name, r)
		if err != nil {
			return "", err
		}
		inB[pod] = true
	}
	type endpoint struct {
		name string
		ip   netip.Addr
		pod  bool
	}
	var a, b []endpoint
	for i := 0; i < pods; i++ {
		pod := h.pod(vc, i)
		ip, err := h.podIP(pod)
		if err != nil {
			return "", fmt.Errorf("%s: %w", pod, err)
		}
		e := endpoint{pod, ip, true}
		if inB[pod] {
			b = append(b, e)
		} else {
			a = append(a, e)
		}
	}
	if f.Operator {
		b = append(b, endpoint{"operator", h.opIP, false})
	} else {
		a = append(a, endpoint{"operator", h.opIP, false})
	}
	if f.Client {
		b = append(b, endpoint{"client", h.clientIP, false})
	} else {
		a = append(a, endpoint{"client", h.clientIP, false})
	}
	// The nodes hit: side B's, and side A's too when the operator is on side B (it sees
	// only B).
	for _, e := range append(append([]endpoint(nil), b...), a...) {
		if e.pod && (inB[e.name] || f.Operator) {
			h.hit(e.name, false, 0)
		}
	}
	if h.sentinel {
		// The sentinels are of the rest: cut from side B's nodes as the other nodes are.
		byPod, err := h.sentinelPods(name)
		if err != nil {
			return "", err
		}
		for _, pod := range slices.Sorted(maps.Keys(byPod)) {
			ip, err := netip.ParseAddr(byPod[pod])
			if err != nil {
				return "", fmt.Errorf("%s has no address", pod)
			}
			a = append(a, endpoint{pod, ip, true})
		}
	}
	// One way (as the simulator's partition-one-way): between two pods only what one side
	// sends is dropped, B's when Outbound; the operator and the client need both ways (a
	// request and its answer), so their pairs are cut whole.
	var cut []string
	for _, x := range a {
		for _, y := range b {
			if !x.pod && !y.pod {
				continue // the operator and the client never talk to each other
			}
			var err error
			switch {
			case f.Kind != sim.FaultPartitionOneWay || !x.pod || !y.pod:
				err = cl.Partition(x.ip, y.ip)
				cut = append(cut, x.name+"/"+y.name)
			case f.Outbound:
				err = cl.DropOneWay(y.ip, x.ip)
				cut = append(cut, y.name+"->"+x.name)
			default:
				err = cl.DropOneWay(x.ip, y.ip)
				cut = append(cut, x.name+"->"+y.name)
			}
			if err != nil {
				return "", err
			}
		}
	}
	names := func(es []endpoint) string {
		var s []string
		for _, e := range es {
			s = append(s, e.name)
		}
		sort.Strings(s)
		return strings.Join(s, ",")
	}
	if f.Kind == sim.FaultPartitionOneWay {
		return fmt.Sprintf("partitioned one way {%s} | {%s}: %s", names(b), names(a), strings.Join(cut, " ")), nil
	}
	return fmt.Sprintf("partitioned {%s} | {%s} (%d pairs cut)", names(b), names(a), len(cut)), nil
}

// requestRestart asks for a rolling restart as kubectl valkey restart does.
func (h *harness) requestRestart(name string) error {
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1beta1.AnnotationRestartRequested, time.Now().UTC().Format(time.RFC3339Nano))
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}}
	return k.Patch(ctx, vc, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// waitState waits up to timeout for the cluster to be in state, and says whether it was.
func (h *harness) waitState(name string, state v1alpha1.State, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if vc, err := h.get(name); err == nil && vc.Status.State == state {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// crashOperator stops the operator (at once, or some seconds into a failover or a rolling
// restart), keeps it down, and starts a new one on the same journal.
func (h *harness) crashOperator(name string, profile v1alpha1.Profile, s step) (string, error) {
	when := "at once"
	delay := time.Duration(s.Delay) * time.Second
	switch s.During {
	case crashFailover:
		delay = time.Duration(s.Delay) * 100 * time.Millisecond
		pod, err := h.resolve(name, sim.NodeRef{Primary: true})
		if err != nil {
			return "", err
		}
		if err := cl.KillContainer(h.ns, pod, valkeyContainer); err != nil {
			return "", err
		}
		h.hit(pod, profile == v1alpha1.ProfileCache, time.Second)
		if h.waitState(name, v1alpha1.StateFailingOver, 20*time.Second) {
			when = fmt.Sprintf("SIGKILL %s, %s into FailingOver", pod, delay)
		} else {
			when = fmt.Sprintf("SIGKILL %s, after waiting 20s for a failover that did not come", pod)
		}
	case crashRoll:
		if vc, err := h.get(name); err == nil && vc.Status.State != v1alpha1.StateRolling {
			if err := h.requestRestart(name); err != nil {
				return "", err
			}
		}
		if h.waitState(name, v1alpha1.StateRolling, 30*time.Second) {
			when = fmt.Sprintf("%s into Rolling", delay)
		} else {
			when = "after waiting 30s for a roll that did not start"
		}
	}
	if s.During != crashAtOnce {
		time.Sleep(delay)
	}
	state := "?"
	if vc, err := h.get(name); err == nil {
		state = string(vc.Status.State)
	}
	if err := h.op.stop(); err != nil {
		return "", err
	}
	time.Sleep(time.Duration(s.Ticks) * time.Second)
	if err := h.op.start(); err != nil {
		return "", err
	}
	return fmt.Sprintf("stopped the operator %s (state %s), restarted it %ds later on the same journal", when, state, s.Ticks), nil
}

// resume thaws a paused pod. The local cluster keeps a container's cgroup across restarts,
// frozen state included, and cannot thaw a container that is not running: a paused container
// that was killed meanwhile comes back frozen, so resume tries again (for up to 30 s) until
// its process runs. A real node would restart it thawed.
func (h *harness) resume(pod string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		h.mu.Lock()
		container, still := h.paused[pod]
		h.mu.Unlock()
		if !still {
			return
		}
		err := cl.ResumeContainer(h.ns, pod, container)
		if err == nil {
			h.mu.Lock()
			delete(h.paused, pod)
			h.mu.Unlock()
			h.logf("resumed %s", pod)
			return
		}
		if time.Now().After(deadline) {
			h.logf("resuming %s: %v (giving up)", pod, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// heal ends every fault still in force: partitions, paused pods, stopped nodes, the IP
// policy; and makes sure an operator runs.
func (h *harness) heal() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.timers {
		t.Stop()
	}
	h.timers = nil
	if err := cl.Heal(); err != nil && !errors.Is(err, context.Canceled) {
		h.logf("heal: %v", err)
	}
	for pod := range h.paused {
		go h.resume(pod)
	}
	for node := range h.stopped {
		if err := cl.StartNode(context.Background(), node); err != nil {
			h.logf("starting %s: %v", node, err)
		}
	}
	h.stopped = map[string]bool{}
	cl.SetNewIPOnRecreate(false)
	if err := h.op.start(); err != nil {
		h.logf("starting the operator: %v", err)
	}
}

// GoString is what rapid prints for the drawn schedule (%#v): the readable form.
func (s schedule) GoString() string { return s.String() }
