package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
)

// recordApply counts, logs and announces what Apply wrote.
func (r *Reconciler) recordApply(ctx context.Context, vc *v1beta1.ValkeyCluster, res kube.Result) {
	for _, n := range res.Created {
		r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "create").Inc()
		logFrom(ctx).Info("created", "object", n)
	}
	for _, n := range res.Deleted {
		r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "delete").Inc()
		r.event(vc, corev1.EventTypeNormal, "Deleted", "%s is no longer wanted (disabled in the spec) and was deleted", n)
	}
	for _, n := range res.Updated {
		r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "repair").Inc()
		r.event(vc, corev1.EventTypeNormal, "Repaired", "%s drifted from its spec and was repaired", n)
	}
}

// narrowReplicationUsers takes back, outside Resharding, the rules an Atomic Slot Migration gave
// the replication user on each node that still has them.
func narrowReplicationUsers(ctx context.Context, w *world) error {
	var errs []error
	for _, n := range w.obs.Nodes {
		if n.Reachable && n.Valkey.ReplicationWidened {
			errs = append(errs, w.pool.RestoreReplicationRules(ctx, n.Pod.IP))
		}
	}
	return errors.Join(errs...)
}

// clusterTurn is one cluster's world for a turn of the loop (machine.StartTurn, Turn.Step):
// it observes through look, persists to status, journals, and carries out the plan's actions
// through the actuators. An action that depends on one that failed is skipped, one that
// failed before waits out its back-off (machine.ActPlan); failures are kept for status
// (w.failing), reported as Events and metrics, and collected in errs.
type clusterTurn struct {
	r   *Reconciler
	ctx context.Context
	vc  *v1beta1.ValkeyCluster
	// w is what look built (set by Observe).
	w    *world
	errs []error
}

// Observe builds the turn's world and answers the switchover request.
func (c *clusterTurn) Observe() (machine.Persisted, machine.Observation, error) {
	w, err := c.r.look(c.ctx, c.vc)
	if err != nil {
		return machine.Persisted{}, machine.Observation{}, err
	}
	c.w = w
	// A deleted cluster still turns only while it waits for its final backup (finalbackup.go).
	w.obs.Spec.CloseWrites = !c.vc.DeletionTimestamp.IsZero()
	persisted := persistedOf(&c.vc.Status)
	if w.obs.Spec.Switchover, err = c.r.switchoverRequest(c.ctx, c.vc, w.obs, persisted); err != nil {
		return machine.Persisted{}, machine.Observation{}, err
	}
	return persisted, w.obs, nil
}

func (c *clusterTurn) Decide(p machine.Persisted, obs machine.Observation) machine.Decision {
	return machine.Decide(p, obs)
}

// Decided remembers what the turn saw and decided, for a backup's sources.
func (c *clusterTurn) Decided(obs machine.Observation, d machine.Decision) []machine.Action {
	c.r.looks.set(c.vc.UID, shared.Look{Obs: obs, Next: d.Next, Passwords: c.w.passwords, At: c.r.now()})
	return d.Actions
}

func (c *clusterTurn) Persist(obs machine.Observation, d machine.Decision) error {
	t := d.Transition
	logFrom(c.ctx).Info("transition", "seq", t.Seq, "from", t.From, "to", t.To, "event", t.Event, "message", t.Message, "observed", observedNodes(obs))
	return c.r.persistTransition(c.ctx, c.vc, d)
}

// Journal appends a transition to the journal, or queues an observation that caused none.
func (c *clusterTurn) Journal(obs machine.Observation, d machine.Decision) {
	if d.Transition != nil {
		c.r.journalAppend(c.ctx, c.vc, historyRecordsOf(c.vc.Status.History), d, obs)
		return
	}
	c.r.journalObserve(c.ctx, c.vc, persistedOf(&c.vc.Status), obs)
}

func (c *clusterTurn) Waiting(why machine.Wait) {
	logFrom(c.ctx).V(1).Info("waiting", "for", why.String(), "kind", why.Kind.String())
}

// Do carries out a run through the actuators: one action, or slot migrations side by side.
func (c *clusterTurn) Do(run []machine.Action) []error {
	return runTogether(run, func(a machine.Action) error { return c.r.do(c.ctx, c.vc, c.w, a) })
}

func (c *clusterTurn) Skipped(pl machine.Planned) {
	log := logFrom(c.ctx)
	switch pl.Verdict {
	case machine.SkipBlocked:
		log.Info("action skipped: it depends on one that failed", "action", pl.Action.String())
	case machine.SkipBackingOff:
		log.V(1).Info("action backing off", "action", pl.Action.String(), "failures", pl.Prior.Count, "retryAt", pl.Prior.RetryAt)
	}
}

func (c *clusterTurn) Done(pl machine.Planned, f machine.ActionFailure, err error) {
	if err != nil {
		c.r.Metrics.ActionErrors.WithLabelValues(pl.Action.Kind()).Inc()
		c.r.event(c.vc, corev1.EventTypeWarning, "ActionFailed", "%s (failure %d in a row, next try in %s): %v", pl.Action, f.Count, c.r.backOff(f.Count), err)
		c.errs = append(c.errs, fmt.Errorf("%s: %w", pl.Action, err))
		return
	}
	if pl.Action.Kind() != "ensure-objects" {
		logFrom(c.ctx).Info("action done", "action", pl.Action.String())
	}
}

// act carries out the turn's plan and keeps its failure records for status; the failures are
// returned together.
func (c *clusterTurn) act(t *machine.Turn) error {
	t.Act(c)
	c.w.failing = nil
	for _, f := range t.Failing() {
		c.w.failing = append(c.w.failing, v1beta1.FailingAction{
			Action: f.Action, Count: f.Count, LastError: f.LastError,
			RetryAt: metav1.NewTime(f.RetryAt.UTC().Truncate(time.Second)),
		})
	}
	return errors.Join(c.errs...)
}

// priorFailures are the failure records status keeps from the last turns.
func priorFailures(vc *v1beta1.ValkeyCluster) []machine.ActionFailure {
	prior := make([]machine.ActionFailure, 0, len(vc.Status.FailingActions))
	for _, f := range vc.Status.FailingActions {
		prior = append(prior, machine.ActionFailure{Action: f.Action, Count: f.Count, LastError: f.LastError, RetryAt: f.RetryAt.Time})
	}
	return prior
}

// runTogether carries out the actions of a run and returns each one's result by index. A run
// of more than one is a run of slot migrations: they run side by side (sources feeding one new
// shard at once is where a resharding wins its time), and the turn records them in order, as
// if they had run one after the other.
func runTogether(run []machine.Action, do func(machine.Action) error) []error {
	out := make([]error, len(run))
	if len(run) == 1 {
		out[0] = do(run[0])
		return out
	}
	var wg sync.WaitGroup
	for i, a := range run {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = do(a)
		}()
	}
	wg.Wait()
	return out
}

// maxBackOff bounds the back-off of a failing action: the machine's actions are what the
// cluster needs now (a promotion, a replica to re-point), so never minutes.
const maxBackOff = time.Minute

// backOff is how long an action that failed count times in a row waits before the next try:
// the retry interval, doubled with each failure, at most maxBackOff.
func (r *Reconciler) backOff(count int32) time.Duration {
	d := r.Options.RetryInterval
	for i := int32(1); i < count && d < maxBackOff; i++ {
		d *= 2
	}
	return min(d, maxBackOff)
}
