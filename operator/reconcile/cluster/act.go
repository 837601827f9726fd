package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
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

// act carries out the decision's actions in order. When one fails, the actions that depend
// on it (machine.Blocked) are skipped and the independent ones still done: a replica that
// cannot be reached must not keep the others from converging. An action that failed is tried
// again only after its back-off (w.failing, written to status.failingActions by report); the
// next reconcile decides again from what the world shows.
func (r *Reconciler) act(ctx context.Context, vc *v1beta1.ValkeyCluster, w *world, actions []machine.Action) error {
	log := logFrom(ctx)
	now := r.now()
	prev := map[string]v1beta1.FailingAction{}
	for _, f := range vc.Status.FailingActions {
		prev[f.Action] = f
	}
	w.failing = nil
	var failed []machine.Action
	var errs []error
	done := map[int]error{}
	for i, a := range actions {
		key := a.String()
		if _, migration := a.(machine.MigrateSlots); migration {
			if _, after := actions[max(i-1, 0)].(machine.MigrateSlots); i == 0 || !after {
				// A run of migrations starts here: carried out side by side now, when the
				// actions before it are done and failed says what they left.
				maps.Copy(done, migrationsTogether(actions, i, func(a machine.Action) error {
					if machine.Blocked(a, failed) {
						return errSkipped
					}
					if f, ok := prev[a.String()]; ok && now.Before(f.RetryAt.Time) {
						return errSkipped
					}
					return r.do(ctx, vc, w, a)
				}))
			}
		}
		if machine.Blocked(a, failed) {
			failed = append(failed, a)
			if f, ok := prev[key]; ok {
				w.failing = append(w.failing, f)
			}
			log.Info("action skipped: it depends on one that failed", "action", key)
			continue
		}
		if f, ok := prev[key]; ok && now.Before(f.RetryAt.Time) {
			failed = append(failed, a)
			w.failing = append(w.failing, f)
			log.V(1).Info("action backing off", "action", key, "failures", f.Count, "retryAt", f.RetryAt.Time)
			continue
		}
		var err error
		if res, ran := done[i]; ran {
			err = res
		} else {
			err = r.do(ctx, vc, w, a)
		}
		if err != nil {
			failed = append(failed, a)
			count := prev[key].Count + 1
			w.failing = append(w.failing, v1beta1.FailingAction{
				Action: key, Count: count, LastError: err.Error(),
				RetryAt: metav1.NewTime(now.Add(r.backOff(count)).UTC().Truncate(time.Second)),
			})
			r.Metrics.ActionErrors.WithLabelValues(a.Kind()).Inc()
			r.event(vc, corev1.EventTypeWarning, "ActionFailed", "%s (failure %d in a row, next try in %s): %v", a, count, r.backOff(count), err)
			errs = append(errs, fmt.Errorf("%s: %w", a, err))
			continue
		}
		if a.Kind() != "ensure-objects" {
			log.Info("action done", "action", key)
		}
	}
	return errors.Join(errs...)
}

// errSkipped marks a migration that migrationsTogether's caller chose not to start.
var errSkipped = errors.New("skipped")

// migrationsTogether carries out, side by side, the run of two or more slot migrations that
// starts at actions[from] (they never block one another: machine.Blocked), and returns each
// one's result by index; act then records them in order, as if they had run there. A migration
// run returns errSkipped for is not in the result, and act decides it as usual (skipped or
// backing off); a run of one is left to act.
func migrationsTogether(actions []machine.Action, from int, run func(machine.Action) error) map[int]error {
	to := from
	for to < len(actions) {
		if _, ok := actions[to].(machine.MigrateSlots); !ok {
			break
		}
		to++
	}
	if to-from < 2 {
		return nil
	}
	out := map[int]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := from; i < to; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := run(actions[i])
			if errors.Is(err, errSkipped) {
				return
			}
			mu.Lock()
			out[i] = err
			mu.Unlock()
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
