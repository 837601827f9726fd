package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// The node agent enforces the ingress rules of NetworkPolicies (networking.k8s.io/v1) for
// its Pods with nftables, as CNI plugins do: on every relevant change (a policy, a Pod's
// labels or its start, a namespace's labels) it computes what each isolated Pod admits
// (netpolicy_rules.go) and loads, in each isolated Pod's own network namespace, a table that
// enforces it (replaced in one transaction when it changes, removed when the Pod is no longer
// isolated). A refused connection gets a TCP reset. See docs/development/local-cluster.md, "NetworkPolicy".

// ErrNoNetworkPolicies is returned by the NetworkPolicy methods when the cluster cannot
// enforce policies here (no nft command).
var ErrNoNetworkPolicies = errors.New("NetworkPolicy enforcement needs root and nftables (apt-get install nftables)")

// npDebounce gathers the burst of events one change makes (a Pod's status is written
// several times as it starts) into one rebuild.
const npDebounce = 50 * time.Millisecond

// npResync rebuilds now and then whatever the events said: the rules go into Pods' network
// namespaces, which appear when a Pod starts, and a rebuild that changes nothing costs no
// nft run.
const npResync = 2 * time.Second

// npRetry is the pause before rendering again after a failed rebuild.
const npRetry = 300 * time.Millisecond

type netPolicy struct {
	cl    *Cluster
	scope npScope
	log   io.Writer

	synced []cache.InformerSynced

	kick chan struct{}

	mu      sync.Mutex
	applied string            // the document (npDocument) last loaded in full
	loaded  bool              // applied is in the kernel
	inNetns map[string]string // network namespace path -> the body loaded there ("" none)
	lastErr error
	syncs   int // rebuilds started, for the log of a test that waits in vain
}

// startNetPolicy registers the informers (before factory.Start). Its loop runs in the
// cluster's background until Stop. Without nft it returns nil: policies are then not
// enforced, as partitions are not.
func startNetPolicy(cl *Cluster, factory informers.SharedInformerFactory) (*netPolicy, error) {
	if _, err := exec.LookPath("nft"); err != nil || os.Geteuid() != 0 {
		fmt.Fprintf(cl.opts.Log, "[netpolicy] NetworkPolicies are not enforced: %v\n", ErrNoNetworkPolicies)
		return nil, nil
	}
	np := &netPolicy{
		cl: cl,
		scope: npScope{
			podRange:  cl.slot.podPrefix(),
			nodeRange: cl.slot.nodePrefix(),
		},
		log:     prefixed(cl.opts.Log, "netpolicy"),
		kick:    make(chan struct{}, 1),
		inNetns: map[string]string{},
		loaded:  true, // no policy, no table: nothing to load
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
			return nil, err
		}
		np.synced = append(np.synced, inf.HasSynced)
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
	tables, running, err := np.renderLive(np.cl.ctx)
	if err != nil {
		np.fail(err)
		return
	}
	if np.inForce(tables, running) {
		return
	}
	if err := np.load(tables, running); err != nil {
		// Most likely a Pod's namespace went away between rendering and loading; the next
		// event or tick renders again. The previous rules stay in force meanwhile.
		np.fail(err)
	}
}

// perNetns is what each running Pod's network namespace must hold: its table's body, "" for
// a Pod no policy isolates.
func perNetns(tables []npTable, running map[types.UID]npRunning) map[string]string {
	want := make(map[string]string, len(running))
	for _, r := range running {
		want[r.netns] = ""
	}
	byIP := make(map[netip.Addr]string, len(running))
	for _, r := range running {
		byIP[r.ip] = r.netns
	}
	for _, t := range tables {
		if netns, ok := byIP[t.ip]; ok {
			want[netns] = t.body
		}
	}
	return want
}

// inForce reports whether tables are what is loaded, namespace by namespace. The document
// alone does not say it: the tables are keyed by address, and a Pod re-created on its old
// address (with its old labels) has the same document but a new network namespace, empty
// (found by the operator suite: a replacement pod answered a client its policy refuses).
func (np *netPolicy) inForce(tables []npTable, running map[types.UID]npRunning) bool {
	want := perNetns(tables, running)
	np.mu.Lock()
	defer np.mu.Unlock()
	if !np.loaded || npDocument(tables) != np.applied {
		return false
	}
	for netns, body := range want {
		if np.inNetns[netns] != body {
			return false
		}
	}
	return true
}

// load puts each isolated Pod's table into its network namespace and takes the table out of
// the namespaces of Pods no longer isolated, touching only the namespaces whose table
// changes.
func (np *netPolicy) load(tables []npTable, running map[types.UID]npRunning) error {
	want := perNetns(tables, running)
	np.mu.Lock()
	had := maps.Clone(np.inNetns)
	np.mu.Unlock()
	var errs []error
	for netns, body := range want {
		if old, ok := had[netns]; ok && old == body || !ok && body == "" {
			continue
		}
		script := fmt.Sprintf("table inet %[1]s\ndelete table inet %[1]s\n", npTableName)
		if body != "" {
			script += fmt.Sprintf("table inet %s {\n%s}\n", npTableName, body)
		}
		cmd := exec.Command("nsenter", "--net="+netns, "--", "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("nft -f - in %s: %w: %s", netns, err, strings.TrimSpace(string(out))))
			continue
		}
		np.mu.Lock()
		np.inNetns[netns] = body
		np.mu.Unlock()
	}
	np.mu.Lock()
	defer np.mu.Unlock()
	for netns := range np.inNetns {
		if _, ok := want[netns]; !ok {
			delete(np.inNetns, netns) // gone with its Pod
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	np.applied, np.loaded, np.lastErr = npDocument(tables), true, nil
	return nil
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

// npRunning is what the agent runs of a Pod: its address and its network namespace.
type npRunning struct {
	ip    netip.Addr
	netns string
}

// render computes each isolated Pod's table from Pods, Namespaces and NetworkPolicies as the
// API has them, joined with what the agent runs: a Pod counts once its network namespace
// exists.
func (np *netPolicy) render(pods []*corev1.Pod, nss []*corev1.Namespace, pols []*networkingv1.NetworkPolicy) ([]npTable, map[types.UID]npRunning, error) {
	running := np.running()
	var in []*npPod
	for _, p := range pods {
		r, ok := running[p.UID]
		if !ok {
			continue // not (yet, or no longer) run by the agent
		}
		in = append(in, &npPod{pod: p, ip: r.ip})
	}
	nsLabels := make(map[string]map[string]string, len(nss))
	for _, ns := range nss {
		nsLabels[ns.Name] = ns.Labels
	}
	tables, err := renderIngress(np.scope, ingressTargets(in, nsLabels, pols))
	return tables, running, err
}

// running maps the Pods the agent runs in a network namespace to their addresses and
// namespaces. When a Pod re-created under the same name shares its address with the old one
// that is still terminating, the new one has it.
func (np *netPolicy) running() map[types.UID]npRunning {
	a := np.cl.agent
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[types.UID]npRunning, len(a.runners))
	holder := map[netip.Addr]types.UID{}
	for uid, r := range a.runners {
		netns := r.netns()
		if netns == "" {
			continue
		}
		if old, ok := holder[r.ip]; ok {
			if r.isTerminated() {
				continue
			}
			delete(out, old)
		}
		holder[r.ip] = uid
		out[uid] = npRunning{ip: r.ip, netns: netns}
	}
	return out
}

// close has nothing to remove: the tables go with the Pods' network namespaces.
func (np *netPolicy) close() error { return nil }

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
		tables, running, err := np.renderLive(ctx)
		want = npDocument(tables)
		if err == nil {
			done := np.inForce(tables, running)
			np.mu.Lock()
			applied = np.applied
			syncs = np.syncs
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

func (np *netPolicy) renderLive(ctx context.Context) ([]npTable, map[types.UID]npRunning, error) {
	cs := np.cl.cs
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	pols, err := cs.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
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

// NetworkPolicyRules returns the enforcer's tables as last loaded, one per isolated Pod's
// network namespace, for the log of a failing test.
func (c *Cluster) NetworkPolicyRules() (string, error) {
	if c.np == nil {
		return "", ErrNoNetworkPolicies
	}
	c.np.mu.Lock()
	defer c.np.mu.Unlock()
	return c.np.applied, nil
}
