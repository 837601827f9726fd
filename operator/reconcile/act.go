package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// errNotSupported is for actions of topologies this operator version does not run yet.
// refuseShrinkingOverAPrimary is the last check before a scale-down: the machine decided it
// with the primary on a kept ordinal, but someone may have moved the role since (a manual
// FAILOVER). Removing a pod that answers as a primary would be an unplanned failover.
func refuseShrinkingOverAPrimary(w *world, d kube.Desired) error {
	for sh, sts := range d.StatefulSets {
		cur := w.sets[sh]
		if cur == nil || cur.Spec.Replicas == nil {
			continue
		}
		want := int(*sts.Spec.Replicas)
		if want >= int(*cur.Spec.Replicas) {
			continue
		}
		for _, n := range w.obs.Nodes {
			// A cluster-mode node that left the bus (remove-node reset it) is an empty primary
			// that serves nothing: it may go.
			offBus := w.obs.Spec.Mode == machine.ModeCluster && !n.Valkey.Joined && len(n.Valkey.Slots) == 0 && n.Valkey.Keys == 0
			if n.Shard == sh && n.Ordinal >= want && n.Reachable && n.Valkey.Role == machine.RolePrimary && !offBus {
				return fmt.Errorf("not shrinking %s to %d pods: %s, which would be removed, answers as a primary", sts.Name, want, n.Name)
			}
		}
	}
	return nil
}

// shardsToRemove are the StatefulSets of shards an EnsureObjects no longer wants, once each is
// checked: every pod its StatefulSet runs answers, is off the cluster bus and holds no slot
// and no key (remove-node reset it after its slots moved away). Its claims are deleted with it,
// so a shard that cannot be checked whole is refused, staying and serving, and the error says
// which pod is in the way.
func shardsToRemove(w *world, d kube.Desired) ([]*appsv1.StatefulSet, error) {
	var out []*appsv1.StatefulSet
	for sh, sts := range w.sets {
		if sh < len(d.StatefulSets) {
			continue
		}
		pods := 0
		if sts.Spec.Replicas != nil {
			pods = int(*sts.Spec.Replicas)
		}
		for ord := 0; ord < pods; ord++ {
			name := fmt.Sprintf("%s-%d", sts.Name, ord)
			var node *machine.Node
			for i := range w.obs.Nodes {
				if w.obs.Nodes[i].Name == name {
					node = &w.obs.Nodes[i]
				}
			}
			switch {
			case node == nil || !node.Reachable:
				return nil, fmt.Errorf("not removing shard %d: %s does not answer, so it cannot be checked empty (its claim would be deleted)", sh, name)
			case node.Valkey.Joined || len(node.Valkey.Known) > 0 || len(node.Valkey.Slots) > 0:
				return nil, fmt.Errorf("not removing shard %d: %s is still in the cluster", sh, name)
			case node.Valkey.Keys > 0:
				return nil, fmt.Errorf("not removing shard %d: %s still holds %d keys", sh, name, node.Valkey.Keys)
			}
		}
		out = append(out, sts)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// refuseShrinkingWithoutItsPrimaries asks each process a shrink keeps (the shards' recorded
// primaries) for its run id right before the StatefulSet shrinks: one that restarted since the
// decision may have come back empty, and the pods the shrink removes may hold the only other
// copies of the shard's writes.
func refuseShrinkingWithoutItsPrimaries(ctx context.Context, w *world, keep []machine.Proc) error {
	for _, k := range keep {
		pod := w.pods[k.Node]
		if pod == nil || pod.Status.PodIP == "" {
			return fmt.Errorf("not shrinking: recorded primary %s has no pod", k.Node)
		}
		if err := w.pool.Alive(ctx, pod.Status.PodIP, k.RunID); err != nil {
			return fmt.Errorf("not shrinking: recorded primary %s is not the process the decision saw: %w", k.Node, err)
		}
	}
	return nil
}

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

var errNotSupported = errors.New("not supported by this operator version")

// peerIPs are the IPs of the cluster's pods other than node (only those whose Valkey answered,
// with answering).
func peerIPs(w *world, node string, answering bool) []string {
	var out []string
	for _, n := range w.obs.Nodes {
		if n.Name != node && n.Pod.IP != "" && (n.Reachable || !answering) {
			out = append(out, n.Pod.IP)
		}
	}
	return out
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

// migrationBudget bounds one classic MigrateSlots call: the reconcile that carries it out
// surveys nothing meanwhile, so a large range moves over several turns (each resumes where the
// cluster shows the last one stopped).
const migrationBudget = 15 * time.Second

// migrationStep is what the slot migrations of a turn did together, for status.progress.
type migrationStep struct {
	result valkey.MigrationResult
	// took is the longest call: they run side by side.
	took time.Duration
}

// addMigration adds one migration call's result to the turn's step; calls run concurrently.
func (w *world) addMigration(res valkey.MigrationResult, took time.Duration) {
	w.migrationMu.Lock()
	defer w.migrationMu.Unlock()
	if w.migration == nil {
		w.migration = &migrationStep{result: valkey.MigrationResult{ASM: res.ASM}}
	}
	m := w.migration
	m.result.Running = m.result.Running || res.Running
	m.result.SlotsMoved += res.SlotsMoved
	m.result.KeysMoved += res.KeysMoved
	m.result.SlotsLeft += res.SlotsLeft
	m.took = max(m.took, took)
}

// atomicSlotMigration says whether slots move with Atomic Slot Migration: only when every node
// that answers reports Valkey 9.0 or later in INFO server (the image tag is not trusted: a
// rolling upgrade runs mixed versions, and the tag may name anything).
func atomicSlotMigration(nodes []machine.Node) bool {
	seen := false
	for _, n := range nodes {
		if !n.Reachable {
			continue
		}
		major, _, _ := strings.Cut(n.Valkey.Version, ".")
		if v, err := strconv.Atoi(major); err != nil || v < 9 {
			return false
		}
		seen = true
	}
	return seen
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

func (r *Reconciler) do(ctx context.Context, vc *v1beta1.ValkeyCluster, w *world, a machine.Action) error {
	ip := func(node string) (string, error) {
		p := w.pods[node]
		if p == nil || p.Status.PodIP == "" {
			return "", fmt.Errorf("pod %s has no IP", node)
		}
		return p.Status.PodIP, nil
	}
	switch a := a.(type) {
	case machine.EnsureObjects:
		desired, err := kube.ForAction(w.desired, a)
		if err != nil {
			return err
		}
		// A stop (hibernation) keeps every claim and removes no copy of anything: the checks
		// of a shrink, which deletes the removed pods' claims, are not for it.
		if a.Replicas != machine.StoppedReplicas {
			if err := refuseShrinkingOverAPrimary(w, desired); err != nil {
				return err
			}
		}
		remove, err := shardsToRemove(w, desired)
		if err != nil {
			return err
		}
		if err := refuseShrinkingWithoutItsPrimaries(ctx, w, a.Keep); err != nil {
			return err
		}
		res, err := kube.Apply(ctx, r.Client, r.apiReader(), desired, true)
		if err != nil {
			return err
		}
		r.recordApply(ctx, vc, res)
		for _, sts := range remove {
			res, err := kube.DeleteShard(ctx, r.Client, sts)
			for _, n := range res.Deleted {
				r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "delete").Inc()
				logFrom(ctx).Info("deleted", "object", n)
			}
			if len(res.Deleted) > 0 {
				r.event(vc, corev1.EventTypeNormal, "ShardRemoved", "%s removed: its slots moved to the other shards and its nodes left the cluster, then its StatefulSet and claims were deleted (%s)", sts.Name, strings.Join(res.Deleted, ", "))
			}
			if err != nil {
				return err
			}
		}
		return nil
	case machine.ExpandVolumes:
		for _, node := range a.Nodes {
			wrote, err := kube.ExpandClaim(ctx, r.Client, vc.Namespace, node, a.Bytes)
			if err != nil {
				return fmt.Errorf("growing the volume of %s: %w", node, err)
			}
			if wrote {
				r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "expand").Inc()
				r.event(vc, corev1.EventTypeNormal, "StorageExpanding", "the volume of %s grows to %s", node, resource.NewQuantity(a.Bytes, resource.BinarySI))
			}
		}
		return nil
	case machine.Promote:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		return w.pool.Promote(ctx, addr, a.RunID)
	case machine.Detach:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		return w.pool.Detach(ctx, addr, a.RunID)
	case machine.Seal:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		return w.pool.Seal(ctx, addr, a.RunID, w.obs.Clock)
	case machine.Unseal:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		return w.pool.Unseal(ctx, addr, a.RunID, w.passwords.Replication)
	case machine.Fence:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		return w.pool.Fence(ctx, addr, a.RunID)
	case machine.OpenWrites:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		return w.pool.OpenWrites(ctx, addr, a.RunID)
	case machine.CloseWrites:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		return w.pool.CloseWrites(ctx, addr, a.RunID)
	case machine.ReplicaOf:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		if w.obs.Spec.Mode == machine.ModeCluster {
			return w.pool.Replicate(ctx, addr, a.RunID, a.PrimaryIP, a.PrimaryRunID, w.passwords.Replication)
		}
		return w.pool.ReplicaOf(ctx, addr, a.RunID, a.PrimaryIP, w.passwords.Replication)
	case machine.AddNode:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		// The node meets every pod of the cluster it does not know: one action joins it to
		// all of them, whichever joined first.
		return w.pool.Meet(ctx, addr, a.RunID, peerIPs(w, a.Node, false)...)
	case machine.RemoveNode:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		return w.pool.RemoveFromCluster(ctx, addr, peerIPs(w, a.Node, true))
	case machine.ForgetNode:
		return w.pool.ForgetEverywhere(ctx, a.ID, peerIPs(w, "", true))
	case machine.MigrateSlots:
		from, err := ip(a.FromNode)
		if err != nil {
			return err
		}
		to, err := ip(a.ToNode)
		if err != nil {
			return err
		}
		// The move is for the processes the decision saw: a source restarted since may hold
		// less than the one decided on (MigrateSlots checks the source, before the move and
		// before each hand-over).
		if err := w.pool.Alive(ctx, to, a.ToRunID); err != nil {
			return fmt.Errorf("target %s: %w", a.ToNode, err)
		}
		var primaries []string
		for _, n := range w.obs.Nodes {
			if n.Reachable && n.Valkey.Role == machine.RolePrimary {
				primaries = append(primaries, n.Pod.IP)
			}
		}
		start := time.Now()
		res, err := w.pool.MigrateSlots(ctx, from, a.FromRunID, to, a.Slots, primaries, atomicSlotMigration(w.obs.Nodes), w.passwords.Operator, migrationBudget)
		w.addMigration(res, time.Since(start))
		logFrom(ctx).Info("slot migration step", "action", a.String(), "asm", res.ASM, "running", res.Running,
			"slotsMoved", res.SlotsMoved, "keysMoved", res.KeysMoved, "slotsLeft", res.SlotsLeft, "took", time.Since(start).Round(time.Millisecond))
		return err
	case machine.TakeSlotsOver:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		from, err := ip(a.From)
		if err != nil {
			return err
		}
		return w.pool.TakeSlotsOver(ctx, addr, a.RunID, from, a.FromRunID, a.Slots)
	case machine.AssignSlots:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		return w.pool.AssignSlots(ctx, addr, a.RunID, a.Slots)
	case machine.HandOver:
		from, err := ip(a.From)
		if err != nil {
			return err
		}
		if w.obs.Spec.Mode == machine.ModeCluster {
			return w.pool.HandOverInCluster(ctx, from, a.FromRunID, a.ToIP, a.ToRunID, r.Options.HandOverTimeout+5*time.Second)
		}
		return w.pool.HandOver(ctx, from, a.FromRunID, a.ToIP, a.ToRunID, r.Options.HandOverTimeout.Milliseconds())
	case machine.RestoreSnapshot:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		return r.restoreSnapshot(ctx, vc, w, a, addr)
	case machine.AddPasswords, machine.PublishPasswords, machine.SwitchMasterAuth, machine.RetirePasswords:
		return r.doPasswords(ctx, vc, w, a, ip)
	case machine.ReloadCertificate:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		if err := w.pool.ReloadCertificate(ctx, addr, a.RunID); err != nil {
			return err
		}
		r.event(vc, corev1.EventTypeNormal, "CertificateReloaded", "%s loaded its certificate files again (the Secret serves serial %s)", a.Node, a.Serial)
		return nil
	case machine.RollPod:
		p := w.pods[a.Node]
		if p == nil {
			return nil
		}
		if err := kube.DeletePod(ctx, r.Client, p); err != nil {
			return err
		}
		r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "roll-pod").Inc()
		r.event(vc, corev1.EventTypeNormal, "RollingPod", "restarting %s at revision %s", a.Node, a.Revision)
		return nil
	}
	return fmt.Errorf("%s: %w", a.Kind(), errNotSupported)
}
