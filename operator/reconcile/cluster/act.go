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

// act carries out a decision's actions through the machine's plan (machine.ActPlan, which
// the simulator runs too): an action that depends on one that failed is skipped, one that
// failed before waits out its back-off, the others are done. Failures are kept for status
// (w.failing), reported as Events and metrics, and returned together.
func (r *Reconciler) act(ctx context.Context, vc *v1beta1.ValkeyCluster, w *world, actions []machine.Action) error {
	log := logFrom(ctx)
	prior := make([]machine.ActionFailure, 0, len(vc.Status.FailingActions))
	for _, f := range vc.Status.FailingActions {
		prior = append(prior, machine.ActionFailure{Action: f.Action, Count: f.Count, LastError: f.LastError, RetryAt: f.RetryAt.Time})
	}
	plan := machine.NewActPlan(actions, prior, r.now(), r.backOff)
	var errs []error
	for run := plan.NextRun(); run != nil; run = plan.NextRun() {
		results := runTogether(run, func(a machine.Action) error { return r.do(ctx, vc, w, a) })
		for i, pl := range run {
			key := pl.Action.String()
			switch pl.Verdict {
			case machine.SkipBlocked:
				log.Info("action skipped: it depends on one that failed", "action", key)
				continue
			case machine.SkipBackingOff:
				log.V(1).Info("action backing off", "action", key, "failures", pl.Prior.Count, "retryAt", pl.Prior.RetryAt)
				continue
			}
			err := results[i]
			if f := plan.Done(pl.Action, err); err != nil {
				r.Metrics.ActionErrors.WithLabelValues(pl.Action.Kind()).Inc()
				r.event(vc, corev1.EventTypeWarning, "ActionFailed", "%s (failure %d in a row, next try in %s): %v", pl.Action, f.Count, r.backOff(f.Count), err)
				errs = append(errs, fmt.Errorf("%s: %w", pl.Action, err))
				continue
			}
			if pl.Action.Kind() != "ensure-objects" {
				log.Info("action done", "action", key)
			}
		}
	}
	w.failing = nil
	for _, f := range plan.Failing() {
		w.failing = append(w.failing, v1beta1.FailingAction{
			Action: f.Action, Count: f.Count, LastError: f.LastError,
			RetryAt: metav1.NewTime(f.RetryAt.UTC().Truncate(time.Second)),
		})
	}
	return errors.Join(errs...)
}

// runTogether carries out the actions of a run the plan says to run, and returns each one's
// result by index (nil for skipped ones). A run of more than one is a run of slot migrations:
// they run side by side (sources feeding one new shard at once is where a resharding wins its
// time), and act records them in order, as if they had run one after the other.
func runTogether(run []machine.Planned, do func(machine.Action) error) []error {
	out := make([]error, len(run))
	if len(run) == 1 {
		if run[0].Verdict == machine.Run {
			out[0] = do(run[0].Action)
		}
		return out
	}
	var wg sync.WaitGroup
	for i, pl := range run {
		if pl.Verdict != machine.Run {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = do(pl.Action)
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
