package cluster

import (
	"context"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// Probing runs apart from the reconcile workers. Each cluster's nodes are surveyed on the
// cluster's own clock (spec.failover.probeIntervalSeconds) by a goroutine of its own, started
// by the cluster's first turn and stopped when it is deleted. A node that does not answer costs
// its own cluster's prober one timeout and no worker anything; a turn takes the latest survey
// instead of surveying again (failed surveys always, answered ones while the cluster is idle);
// and an idle cluster's turn runs when a survey finds something the machine must decide on (a
// node that did not answer, or answered differently apart from offsets and key counts), not at
// every interval (a cluster in an operation keeps its turns at its interval or sooner).
// An idle cluster's turn otherwise runs every idleResync. With 1000 clusters on one operator,
// probing then costs surveys, not turns, and probe cadence does not depend on how busy the
// workers are (BenchmarkManyClusters).

// idleResync is how often an idle cluster (Steady, nothing to do or wait for, no Secret of the
// user's to read) whose nodes the prober surveys is reconciled anyway: objects changed behind
// the watches' backs, clocks the machine reads (none in an idle Steady today). A cluster that
// reads the user's Secrets (its application password, spec.tls, ValkeyACL passwords) keeps a
// turn every interval: nothing reports their changes (found by
// TestARotationSurvivesAnOperatorRestartAndAFailover).
const idleResync = 30 * time.Second

// probeResult is one survey of one node by the prober.
type probeResult struct {
	// started and done: when the survey was sent, and when it was answered or given up (a
	// node that does not answer is known to have failed only at the end of its timeout).
	started, done time.Time
	ip            string
	container     string // the pod's valkey container at the time
	v             machine.Valkey
	st            valkey.Stats
	err           error
}

// probeTarget is a node to survey, as the cluster's last turn saw its pod.
type probeTarget struct {
	ip, container string
}

// clusterProbe is one cluster's prober.
type clusterProbe struct {
	key  types.NamespacedName
	uid  types.UID
	stop context.CancelFunc

	mu       sync.Mutex
	interval time.Duration
	pool     *valkey.Pool
	targets  map[string]probeTarget
	results  map[string]probeResult
	// idle: the last turn left the cluster Steady with nothing to do or wait for; the turn may
	// then take answered surveys as they are.
	idle bool
	// nodes are the last turn's nodes (pod facts), which each round's surveys update for the
	// data-plane metrics; lastStart is when the previous round started (the cadence).
	nodes     []machine.Node
	lastStart time.Time
}

// prober holds every cluster's prober.
type prober struct {
	r    *Reconciler
	wake chan event.GenericEvent

	mu       sync.Mutex
	clusters map[types.UID]*clusterProbe
	// stopped: the manager stopped; a turn still finishing must not start a prober that
	// nothing would stop (it would survey, and wake a controller that is gone, for ever).
	stopped bool
}

func newProber(r *Reconciler) *prober {
	return &prober{r: r, wake: make(chan event.GenericEvent, 1024), clusters: map[types.UID]*clusterProbe{}}
}

// track makes the cluster's prober survey the nodes of this turn's world, at its interval,
// starting it on the first call.
func (p *prober) track(vc *v1beta1.ValkeyCluster, w *world, idle bool) {
	targets := map[string]probeTarget{}
	for _, n := range w.obs.Nodes {
		if n.Pod.Exists && n.Pod.Running && n.Pod.IP != "" {
			targets[n.Name] = probeTarget{ip: n.Pod.IP, container: valkeyContainerID(w.pods[n.Name])}
		}
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	c := p.clusters[vc.UID]
	if c == nil {
		ctx, cancel := context.WithCancel(context.Background())
		c = &clusterProbe{key: types.NamespacedName{Namespace: vc.Namespace, Name: vc.Name}, uid: vc.UID, stop: cancel, results: map[string]probeResult{}}
		p.clusters[vc.UID] = c
		defer func() { go p.run(ctx, c) }()
	}
	p.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.interval, c.pool, c.targets, c.idle = w.interval, w.pool, targets, idle
	c.nodes = append(c.nodes[:0], w.obs.Nodes...)
}

// poke wakes a cluster's turn (a background check finished), unless the queue is full: the
// cluster is then reconciled at its next probe or resync anyway.
func (p *prober) poke(vc *v1beta1.ValkeyCluster) {
	select {
	case p.wake <- wakeEvent(types.NamespacedName{Namespace: vc.Namespace, Name: vc.Name}):
	default:
	}
}

func (c *clusterProbe) isIdle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idle
}

// wakeEvent asks the controller for a turn of the cluster key.
func wakeEvent(key types.NamespacedName) event.GenericEvent {
	return event.GenericEvent{Object: &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
}

// stopAll stops every prober: the operator stops (or lost its lease).
func (p *prober) stopAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	for uid, c := range p.clusters {
		c.stop()
		delete(p.clusters, uid)
	}
}

// forget stops a deleted cluster's prober.
func (p *prober) Remembers(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.clusters[uid]
	return ok
}

func (p *prober) Forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.clusters[uid]; c != nil {
		c.stop()
		delete(p.clusters, uid)
	}
}

// latest is the prober's survey of node that a turn may take instead of surveying: of the same
// pod (address and container), ended within the last interval; an answered one only while the
// cluster is idle and if it started after acted (the turn's own last actions).
func (p *prober) latest(uid types.UID, node, ip, container string, acted time.Time) (probeResult, bool) {
	p.mu.Lock()
	c := p.clusters[uid]
	p.mu.Unlock()
	if c == nil {
		return probeResult{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	res, ok := c.results[node]
	if !ok || res.ip != ip || res.container != container || time.Since(res.done) > c.interval {
		return probeResult{}, false
	}
	// A node that did not answer is taken as it is whatever the turn did since: no action
	// makes a node answer, and one that deletes or restarts it changes the address or the
	// container. During a failover the dead node then costs no turn a timeout.
	if res.err == nil && (!c.idle || res.started.Before(acted)) {
		return probeResult{}, false
	}
	return res, true
}

// run surveys the cluster's nodes every interval until the cluster is forgotten.
func (p *prober) run(ctx context.Context, c *clusterProbe) {
	for {
		start := time.Now()
		// Only an idle cluster is woken: a cluster in an operation has its turns at its
		// interval or sooner already, and extra turns in the middle of one (a resharding:
		// every survey differs) cost a real client a connection closed under it
		// (TestOneWriterThroughShards3To5To3AndReplicas2To3To2, 2 runs in 3).
		if p.round(ctx, c) && c.isIdle() {
			select {
			case p.wake <- wakeEvent(c.key):
			case <-ctx.Done():
				return
			}
		}
		c.mu.Lock()
		interval := c.interval
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start.Add(interval))):
		}
	}
}

// round surveys every target once, in parallel, each within one interval, and reports whether
// the machine should look: a node did not answer, or answered differently.
func (p *prober) round(ctx context.Context, c *clusterProbe) bool {
	c.mu.Lock()
	interval, pool := c.interval, c.pool
	targets := make(map[string]probeTarget, len(c.targets))
	for name, t := range c.targets {
		targets[name] = t
	}
	if now := time.Now(); interval > 0 {
		if !c.lastStart.IsZero() {
			p.r.Metrics.ProbeCadence.Observe(now.Sub(c.lastStart).Seconds() / interval.Seconds())
		}
		c.lastStart = now
	}
	c.mu.Unlock()
	if pool == nil || interval <= 0 {
		return false
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	changed := false
	for name, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := probeResult{started: time.Now(), ip: t.ip, container: t.container}
			res.v, res.st, res.err = surveyWithin(ctx, pool, t.ip, interval)
			res.done = time.Now()
			if ctx.Err() != nil {
				return
			}
			ok := res.err == nil
			if ok {
				p.r.answered.update(c.uid, name, func(string, bool) (string, bool) { return t.container, t.container != "" })
			}
			p.r.probes.count(c.uid, name, ok)
			p.r.Metrics.Probes.WithLabelValues(c.key.Namespace, c.key.Name, outcome(ok)).Inc()
			c.mu.Lock()
			prev, seen := c.results[name]
			c.results[name] = res
			c.mu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			changed = changed || !ok || !seen || prev.err != nil || !reflect.DeepEqual(steadyPart(prev.v), steadyPart(res.v))
		}()
	}
	wg.Wait()
	if ctx.Err() == nil {
		p.recordMetrics(c)
	}
	return changed
}

// recordMetrics publishes the data-plane metrics from the last turn's nodes updated with this
// round's surveys: between turns (an idle cluster's come every idleResync) they stay current.
func (p *prober) recordMetrics(c *clusterProbe) {
	c.mu.Lock()
	nodes := append([]machine.Node(nil), c.nodes...)
	stats := map[string]valkey.Stats{}
	for i := range nodes {
		res, ok := c.results[nodes[i].Name]
		if !ok || res.ip != nodes[i].Pod.IP {
			continue
		}
		nodes[i].Reachable = res.err == nil
		if res.err == nil {
			nodes[i].Valkey = res.v
			stats[nodes[i].Name] = res.st
		}
	}
	c.mu.Unlock()
	p.r.Metrics.Nodes.Record(c.key, nodes, stats)
}

// steadyPart is a survey without what moves on its own while nothing happens: offsets, key
// counts and the data digest move with every write.
func steadyPart(v machine.Valkey) machine.Valkey {
	v.Offset, v.SecondOffset, v.Keys, v.Digest = 0, 0, 0, ""
	return v
}

func outcome(ok bool) string {
	if ok {
		return "answered"
	}
	return "failed"
}
