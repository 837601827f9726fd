package localcluster

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// agent is the node agent: it registers the Nodes and runs every Pod bound to one of them.
type agent struct {
	cl    *Cluster
	nodes map[string]*node

	mu      sync.Mutex
	runners map[types.UID]*podRunner
	newIPs  bool // Options.NewIPOnRecreate, changeable at run time
	wg      sync.WaitGroup
	// stopping: stopAll has begun, and a Pod that appears now (a controller still at work
	// re-creates one) gets no runner, which stopAll would wait for and never end.
	stopping bool

	// configMaps and secrets are watch-fed caches that keep API-backed volumes current, as
	// kubelet's default (Watch) strategy does: two live GETs per Pod every refresh made 300
	// Pods send 300 requests a second, more than the cluster's client allows, and every other
	// request of the test (a node stop's status updates among them) waited behind them.
	configMaps corelisters.ConfigMapLister
	secrets    corelisters.SecretLister
	synced     []cache.InformerSynced
}

func (a *agent) start(factory informers.SharedInformerFactory) error {
	cms, secs := factory.Core().V1().ConfigMaps(), factory.Core().V1().Secrets()
	a.configMaps, a.secrets = cms.Lister(), secs.Lister()
	a.synced = []cache.InformerSynced{cms.Informer().HasSynced, secs.Informer().HasSynced}
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.sync(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { a.sync(obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				a.gone(p)
			}
		},
	})
	return err
}

func (a *agent) sync(p *corev1.Pod) {
	n, ours := a.nodes[p.Spec.NodeName]
	if !ours {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping {
		return
	}
	if r, ok := a.runners[p.UID]; ok {
		r.update(p)
		return
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		if p.DeletionTimestamp == nil {
			return // finished before this agent started; nothing to run
		}
	}
	key := p.Namespace + "/" + p.Name
	if a.newIPs {
		// Forget the name's address so that the next Pod of this name gets a new one too.
		a.cl.ipam.release(key)
		key = string(p.UID)
	}
	ip, err := a.cl.ipam.assign(key)
	if err != nil {
		fmt.Fprintf(a.cl.opts.Log, "[node-agent] %s: %v\n", key, err)
		return
	}
	r := newPodRunner(a.cl, p, n)
	r.ip, r.ipKey = ip, key
	a.runners[p.UID] = r
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		r.run()
		a.mu.Lock()
		delete(a.runners, p.UID)
		a.mu.Unlock()
	}()
	if p.DeletionTimestamp != nil {
		r.update(p)
	}
}

// gone handles a Pod removed from the API (after our final delete, or forced): its
// processes must not outlive it.
func (a *agent) gone(p *corev1.Pod) {
	a.mu.Lock()
	r, ok := a.runners[p.UID]
	a.mu.Unlock()
	if ok {
		r.cancelWhenGone()
	}
}

func (a *agent) runner(namespace, name string) (*podRunner, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var found *podRunner
	for _, r := range a.runners {
		p := r.currentPod()
		if p.Namespace == namespace && p.Name == name && !r.isTerminated() {
			found = r
		}
	}
	if found == nil {
		return nil, fmt.Errorf("pod %s/%s does not run on this local cluster", namespace, name)
	}
	return found, nil
}

func (a *agent) runnersOn(n *node) []*podRunner {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*podRunner
	for _, r := range a.runners {
		if r.node == n {
			out = append(out, r)
		}
	}
	return out
}

// stopAll kills every container at once (the cluster is going away) and waits for the
// runners to finish.
func (a *agent) stopAll() {
	a.mu.Lock()
	a.stopping = true
	rs := make([]*podRunner, 0, len(a.runners))
	for _, r := range a.runners {
		rs = append(rs, r)
	}
	a.mu.Unlock()
	for _, r := range rs {
		r.cancelWhenGone()
	}
	a.wg.Wait()
}

// SetNewIPOnRecreate switches, for Pods created from now on, between keeping the address of
// a Pod's name (off) and a new address per Pod (on, as real clusters do): a fault that makes
// the next re-creation of a Pod change its IP.
func (c *Cluster) SetNewIPOnRecreate(on bool) {
	c.agent.mu.Lock()
	defer c.agent.mu.Unlock()
	c.agent.newIPs = on
}

// cachesSynced reports whether the ConfigMap and Secret caches hold the API server's objects.
func (a *agent) cachesSynced() bool {
	for _, ok := range a.synced {
		if !ok() {
			return false
		}
	}
	return len(a.synced) > 0
}
