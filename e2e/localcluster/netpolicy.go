package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster/netfault"
)

// The node agent enforces the ingress rules of NetworkPolicies (networking.k8s.io/v1) for
// its Pods with an nftables table of its own, vkfsm_lc<slot>_np_<pid>: on every relevant change
// (a policy, a Pod's labels or its start, a namespace's labels) it computes what each isolated
// Pod admits (netpolicy_rules.go) and replaces the whole table in one transaction. A refused
// connection gets a TCP reset. See docs/development/local-cluster.md, "NetworkPolicy".

// ErrNoNetworkPolicies is returned by the NetworkPolicy methods when the cluster cannot
// enforce policies here (no nft command).
var ErrNoNetworkPolicies = errors.New("NetworkPolicy enforcement needs root and nftables (apt-get install nftables)")

// npDebounce gathers the burst of events one change makes (a Pod's status is written
// several times as it starts) into one rebuild.
const npDebounce = 50 * time.Millisecond

// npResync rebuilds now and then whatever the events said: the rules name Pods' cgroups,
// which appear when a container starts, and a rebuild that changes nothing costs no nft run.
const npResync = 2 * time.Second

// npRetry is the pause before rendering again after a failed rebuild.
const npRetry = 300 * time.Millisecond

type netPolicy struct {
	cl    *Cluster
	table *netfault.Table
	scope npScope
	log   io.Writer

	synced []cache.InformerSynced

	kick chan struct{}

	mu      sync.Mutex
	applied string // the body last loaded
	loaded  bool   // applied is in the kernel
	lastErr error
	syncs   int // rebuilds started, for the log of a test that waits in vain
}

// startNetPolicy creates the table and registers the informers (before factory.Start). Its
// loop runs in the cluster's background until Stop. Without nft it returns nil: policies are
// then not enforced, as partitions are not.
func startNetPolicy(cl *Cluster, factory informers.SharedInformerFactory) (*netPolicy, error) {
	t, err := netfault.New(fmt.Sprintf("lc%d_np", cl.slot.n))
	if errors.Is(err, netfault.ErrNotRoot) || errors.Is(err, netfault.ErrNoNft) {
		fmt.Fprintf(cl.opts.Log, "[netpolicy] NetworkPolicies are not enforced: %v\n", err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	np := &netPolicy{
		cl:    cl,
		table: t,
		scope: npScope{
			cgroup:    cl.cg.rel(),
			podRange:  cl.slot.podPrefix(),
			nodeRange: netip.PrefixFrom(cl.slot.nodeIP(0), 24).Masked(),
		},
		log:  prefixed(cl.opts.Log, "netpolicy"),
		kick: make(chan struct{}, 1),
	}
	kick := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { np.trigger() },
		UpdateFunc: func(_, _ any) { np.trigger() },
		DeleteFunc: func(any) { np.trigger() },
	}
	pods := factory.Core().V1().Pods()
	nss := factory.Core().V1().Namespaces()
	pols := factory.Networking().V1().NetworkPolicies()
	for _, inf := range []cache.SharedIndexInformer{pods.Informer(), nss.Informer(), pols.Informer()} {
		if _, err := inf.AddEventHandler(kick); err != nil {
			_ = t.Close()
			return nil, err
		}
		np.synced = append(np.synced, inf.HasSynced)
	}
	// An empty table from the start: Leftovers and Stop see it whether or not a policy
	// ever exists.
	empty, err := renderIngress(np.scope, nil)
	if err == nil {
		err = np.load(empty)
	}
	if err != nil {
		_ = t.Close()
		return nil, err
	}
	cl.goBackground(func() { np.run(cl.ctx) })
	return np, nil
}

func (np *netPolicy) trigger() {
	select {
	case np.kick <- struct{}{}:
	default:
	}
}

func (np *netPolicy) run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), np.synced...) {
		return
	}
	tick := time.NewTicker(npResync)
	defer tick.Stop()
	for {
		np.sync()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-np.kick:
			select {
			case <-ctx.Done():
				return
			case <-time.After(npDebounce):
			}
		}
	}
}

// sync rebuilds the table from the informers' caches, when that changes it.
func (np *netPolicy) sync() {
	np.mu.Lock()
	np.syncs++
	np.mu.Unlock()
	// The informers only say when to rebuild; what is rebuilt is read from the API server
	// itself. Built from the informers' caches, the rules once kept a Pod the API server no
	// longer had (after a node stop and restart, in the operator suite) while
	// WaitNetworkPolicies, reading the API, waited in vain: the rules must be what the API
	// says, so they are read from it.
	body, err := np.renderLive(np.cl.ctx)
	if err != nil {
		np.fail(err)
		return
	}
	np.mu.Lock()
	same := np.loaded && body == np.applied
	np.mu.Unlock()
	if same {
		return
	}
	if err := np.load(body); err != nil {
		// Most likely a Pod's cgroup went away between rendering and loading; the next
		// event or tick renders again. The previous rules stay in force meanwhile.
		np.fail(err)
	}
}

func (np *netPolicy) load(body string) error {
	err := np.table.Load(body)
	np.mu.Lock()
	defer np.mu.Unlock()
	if err == nil {
		np.applied, np.loaded, np.lastErr = body, true, nil
	}
	return err
}

func (np *netPolicy) fail(err error) {
	np.mu.Lock()
	changed := np.lastErr == nil || np.lastErr.Error() != err.Error()
	np.lastErr = err
	np.mu.Unlock()
	if changed {
		fmt.Fprintf(np.log, "rebuilding the rules: %v\n", err)
	}
	time.AfterFunc(npRetry, np.trigger)
}

// render computes the table's body from Pods, Namespaces and NetworkPolicies as the API has
// them, joined with what the agent runs: a Pod's address and whether its cgroup exists.
func (np *netPolicy) render(pods []*corev1.Pod, nss []*corev1.Namespace, pols []*networkingv1.NetworkPolicy) (string, error) {
	running := np.running()
	var in []*npPod
	for _, p := range pods {
		ip, ok := running[p.UID]
		if !ok {
			continue // not (yet, or no longer) run by the agent
		}
		cg := ""
		if _, err := os.Stat(np.cl.cg.path(string(p.UID))); err == nil {
			cg = np.cl.cg.rel(string(p.UID))
		}
		in = append(in, &npPod{pod: p, ip: ip, cgroup: cg})
	}
	nsLabels := make(map[string]map[string]string, len(nss))
	for _, ns := range nss {
		nsLabels[ns.Name] = ns.Labels
	}
	return renderIngress(np.scope, ingressTargets(in, nsLabels, pols))
}

// running maps the Pods the agent runs to their addresses. When a Pod re-created under the
// same name shares its address with the old one that is still terminating, the new one has
// it.
func (np *netPolicy) running() map[types.UID]netip.Addr {
	a := np.cl.agent
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[types.UID]netip.Addr, len(a.runners))
	holder := map[netip.Addr]types.UID{}
	for uid, r := range a.runners {
		if old, ok := holder[r.ip]; ok {
			if r.isTerminated() {
				continue
			}
			delete(out, old)
		}
		holder[r.ip] = uid
		out[uid] = r.ip
	}
	return out
}

func (np *netPolicy) close() error {
	return np.table.Close()
}

// WaitNetworkPolicies waits until the node agent's rules enforce the NetworkPolicies, Pods
// and Namespaces as the API server has them now: call it after creating, changing or
// deleting a policy, or relabelling a Pod, before checking who gets through. Enforcement is
// always on; without this the rules follow within a fraction of a second.
func (c *Cluster) WaitNetworkPolicies(ctx context.Context) error {
	np := c.np
	if np == nil {
		return ErrNoNetworkPolicies
	}
	var want, applied string
	var syncs int
	for {
		np.trigger()
		var err error
		want, err = np.renderLive(ctx)
		if err == nil {
			np.mu.Lock()
			applied = np.applied
			syncs = np.syncs
			done := np.loaded && applied == want
			err = np.lastErr
			np.mu.Unlock()
			if done {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the NetworkPolicy rules did not catch up with the API (last error: %v; %d rebuilds; %s): %w", err, syncs, firstDifference(applied, want), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// firstDifference names the first line where the loaded rules and the wanted ones differ.
func firstDifference(loaded, want string) string {
	l, w := strings.Split(loaded, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(l), len(w)); i++ {
		var a, b string
		if i < len(l) {
			a = l[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d loaded %q, wanted %q", i+1, a, b)
		}
	}
	return "no difference"
}

func (np *netPolicy) renderLive(ctx context.Context) (string, error) {
	cs := np.cl.cs
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	pols, err := cs.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	return np.render(ptrs(pods.Items), ptrs(nss.Items), ptrs(pols.Items))
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// NetworkPolicyRules returns the enforcer's nftables table as nft prints it, for the log of a
// failing test.
func (c *Cluster) NetworkPolicyRules() (string, error) {
	if c.np == nil {
		return "", ErrNoNetworkPolicies
	}
	return c.np.table.Rules()
}
