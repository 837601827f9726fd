package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// errConflict means the status changed under us: observe again before deciding anything.
var errConflict = errors.New("status changed since it was read")

// journalKey names a cluster's journal stream; the UID keeps a re-created cluster of the same
// name apart.
func journalKey(vc *v1beta1.ValkeyCluster) string {
	return vc.Namespace + "/" + vc.Name + "/" + string(vc.UID)
}

// statusWriteError is a status write the API server refused for another reason than a
// conflict (an admission policy, a validation rule, the API server unavailable): reported
// and retried at the retry interval, never in a tight loop.
type statusWriteError struct {
	kind string
	err  error
}

func (e statusWriteError) Error() string {
	return fmt.Sprintf("writing status (%s): %v", e.kind, e.err)
}
func (e statusWriteError) Unwrap() error { return e.err }

// patchStatus writes vc's status with optimistic locking: the write fails if anyone (another
// leader, a previous reconcile) changed the object since it was read.
func (r *Reconciler) patchStatus(ctx context.Context, vc, before *v1beta1.ValkeyCluster, kind string) error {
	err := r.Client.Status().Patch(ctx, vc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsConflict(err):
		return errConflict
	case err == nil:
		r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, kind).Inc()
		return nil
	case apierrors.IsNotFound(err):
		return err
	}
	return statusWriteError{kind: kind, err: err}
}

// initialize persists Bootstrapping for a new cluster before anything is created for it.
func (r *Reconciler) initialize(ctx context.Context, vc *v1beta1.ValkeyCluster) error {
	before := vc.DeepCopy()
	now := r.now().UTC().Truncate(time.Microsecond)
	vc.Status.State = v1beta1.StateBootstrapping
	vc.Status.Phase = string(machine.Bootstrapping)
	vc.Status.Conditions = apiConditions(machine.InitialConditions(now), vc.Generation)
	vc.Status.Machine = &v1beta1.MachineStatus{}
	vc.Status.ObservedGeneration = vc.Generation
	if err := r.patchStatus(ctx, vc, before, "status-initial"); err != nil {
		return err
	}
	r.Metrics.SetState(vc.Namespace, vc.Name, machine.Bootstrapping, float64(now.Unix()))
	r.event(vc, corev1.EventTypeNormal, "Bootstrapping", "new cluster: creating its objects")
	return nil
}

// persistTransition writes a decision's transition before any of its actions run: state,
// machine memory, conditions and history in one status patch, then the Event and the
// metrics (the turn journals it next). A crash after the patch is harmless: the next
// reconcile starts from it (and the journal append is idempotent and backfilled).
func (r *Reconciler) persistTransition(ctx context.Context, vc *v1beta1.ValkeyCluster, d machine.Decision) error {
	t := *d.Transition
	before := vc.DeepCopy()
	var entered time.Time // when the state left now was entered
	if n := len(vc.Status.History); n > 0 {
		entered = vc.Status.History[n-1].Time.Time
	}
	history, err := machine.AppendHistory(historyRecordsOf(vc.Status.History), machine.RecordOf(t), r.Options.HistoryLimit)
	if err != nil {
		// status.history must stay gap-free; a record that does not follow means the status
		// we read is not the one the machine's memory came from.
		return fmt.Errorf("%w: %v", errConflict, err)
	}
	vc.Status.State = v1beta1.State(t.To)
	vc.Status.Phase = string(d.Next.Phase())
	vc.Status.Machine = machineStatusOf(d.Next)
	vc.Status.Conditions = apiConditions(machine.ApplyTransition(conditionsOf(vc.Status.Conditions), t), vc.Generation)
	vc.Status.History = vc.Status.History[:0:0]
	for _, h := range history {
		vc.Status.History = append(vc.Status.History, historyEntryOf(h))
	}
	vc.Status.ObservedGeneration = vc.Generation
	if err := r.patchStatus(ctx, vc, before, "status-transition"); err != nil {
		return err
	}
	typ := corev1.EventTypeNormal
	if t.To == machine.FailingOver {
		typ = corev1.EventTypeWarning
	}
	r.event(vc, typ, t.Reason(), "%s -> %s (%s): %s", t.From, t.To, t.Event, t.Message)
	r.Metrics.Transitions.WithLabelValues(string(t.From), string(t.To), string(t.Event)).Inc()
	r.Metrics.SetState(vc.Namespace, vc.Name, t.To, float64(t.Time.Unix()))
	if t.From == machine.FailingOver && t.To == machine.Steady && !entered.IsZero() {
		r.Metrics.Failovers.WithLabelValues(vc.Namespace, vc.Name).Inc()
		r.Metrics.FailoverSeconds.WithLabelValues(vc.Namespace, vc.Name).Observe(t.Time.Sub(entered).Seconds())
	}
	return nil
}

// journalAppend records the transition in the bbolt journal, first backfilling from
// status.history what this operator never journaled (it was not the leader then).
func (r *Reconciler) journalAppend(ctx context.Context, vc *v1beta1.ValkeyCluster, history []machine.HistoryRecord, d machine.Decision, obs machine.Observation) {
	if r.Journal == nil {
		return
	}
	log := logFrom(ctx)
	key := journalKey(vc)
	entry, _ := machine.EntryFor(d, obs)
	if last, err := r.Journal.Last(key); err == nil && last+1 < entry.Seq {
		if n, err := r.Journal.Backfill(key, history[:len(history)-1]); err != nil {
			log.Error(err, "backfilling the journal from status.history")
		} else if n > 0 {
			log.Info("journal backfilled from status.history", "records", n)
		}
	}
	if err := r.Journal.Append(key, entry); err != nil {
		// Status is authoritative; a journal failure is reported, not fatal.
		log.Error(err, "appending to the journal", "seq", entry.Seq)
	}
}

// journalObserve queues an observation that caused no transition for the journal (replays
// with other settings need them; journal.Observe keeps them bounded and writes them off this
// path). A leader that has not journaled the state it was decided on backfills it from
// status.history first, as journalAppend does.
func (r *Reconciler) journalObserve(ctx context.Context, vc *v1beta1.ValkeyCluster, p machine.Persisted, obs machine.Observation) {
	if r.Journal == nil {
		return
	}
	key := journalKey(vc)
	if last, err := r.Journal.Last(key); err == nil && last < p.Seq {
		if _, err := r.Journal.Backfill(key, historyRecordsOf(vc.Status.History)); err != nil {
			logFrom(ctx).Error(err, "backfilling the journal from status.history")
		}
	}
	r.Journal.Observe(key, p.Seq, obs)
}

// errCannotGoOn is a turn that cannot observe or act at all (the auth Secret lost): its
// reason is in status.waiting, and it is looked at again at the retry interval.
type errCannotGoOn struct{ why string }

func (e errCannotGoOn) Error() string { return e.why }

// waitFor writes why to status.waiting (when it is not there yet) and ends the turn. A
// cluster with no primary recorded yet (a new one) serves nothing: Ready says why too, as a
// turn that observes would (machine.Observed), so kubectl wait and tools see it. A cluster
// that served keeps the Ready its last observation computed: this turn observed nothing.
func (r *Reconciler) waitFor(ctx context.Context, vc *v1beta1.ValkeyCluster, why string) error {
	before := vc.DeepCopy()
	vc.Status.Waiting = why
	if p := persistedOf(&vc.Status); len(p.Shards) == 0 {
		var ready []machine.Condition
		for _, c := range machine.Observed(p, machine.Observation{}, machine.Decision{Waiting: machine.Wait{Kind: machine.WaitOperator, Detail: why}}) {
			if c.Type == machine.ConditionReady {
				ready = append(ready, c)
			}
		}
		vc.Status.Conditions = apiConditions(machine.MergeObserved(conditionsOf(vc.Status.Conditions), ready, r.now().UTC()), vc.Generation)
	}
	if !equality.Semantic.DeepEqual(before.Status, vc.Status) {
		if err := r.patchStatus(ctx, vc, before, "status-waiting"); err != nil {
			return err
		}
	}
	return errCannotGoOn{why}
}
