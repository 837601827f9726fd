package reconcile

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// errNotSupported is for actions of topologies this operator version does not run yet.
// refuseShrinkingOverAPrimary is the last check before a scale-down: the machine decided it
// with the primary on a kept ordinal, but someone may have moved the role since (a manual
// FAILOVER). Removing a pod that answers as a primary would be an unplanned failover.
func refuseShrinkingOverAPrimary(w *world, d kube.Desired) error {
	if w.sts == nil || w.sts.Spec.Replicas == nil {
		return nil
	}
	want := int(*d.StatefulSet.Spec.Replicas)
	if want >= int(*w.sts.Spec.Replicas) {
		return nil
	}
	for _, n := range w.obs.Nodes {
		if n.Ordinal >= want && n.Reachable && n.Valkey.Role == machine.RolePrimary {
			return fmt.Errorf("not shrinking to %d pods: %s, which would be removed, answers as a primary", want, n.Name)
		}
	}
	return nil
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
func (r *Reconciler) recordApply(ctx context.Context, vc *v1alpha1.ValkeyCluster, res kube.Result) {
	for _, n := range res.Created {
		r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "create").Inc()
		logFrom(ctx).Info("created", "object", n)
	}
	for _, n := range res.Updated {
		r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "repair").Inc()
		r.event(vc, corev1.EventTypeNormal, "Repaired", "%s drifted from its spec and was repaired", n)
	}
}

var errNotSupported = errors.New("not supported by this operator version")

// act carries out the decision's actions in order. It stops at the first failure: later
// actions may depend on it, and the next reconcile decides again from what the world shows.
func (r *Reconciler) act(ctx context.Context, vc *v1alpha1.ValkeyCluster, w *world, actions []machine.Action) error {
	log := logFrom(ctx)
	for _, a := range actions {
		err := r.do(ctx, vc, w, a)
		if err != nil {
			r.Metrics.ActionErrors.WithLabelValues(a.Kind()).Inc()
			r.event(vc, corev1.EventTypeWarning, "ActionFailed", "%s: %v", a, err)
			return fmt.Errorf("%s: %w", a, err)
		}
		if a.Kind() != "ensure-objects" {
			log.Info("action done", "action", a.String())
		}
	}
	return nil
}

func (r *Reconciler) do(ctx context.Context, vc *v1alpha1.ValkeyCluster, w *world, a machine.Action) error {
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
		if err := refuseShrinkingOverAPrimary(w, desired); err != nil {
			return err
		}
		if err := refuseShrinkingWithoutItsPrimaries(ctx, w, a.Keep); err != nil {
			return err
		}
		res, err := kube.Apply(ctx, r.Client, desired, true)
		if err != nil {
			return err
		}
		r.recordApply(ctx, vc, res)
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
	case machine.ReplicaOf:
		addr, err := ip(a.Node)
		if err != nil {
			return err
		}
		return w.pool.ReplicaOf(ctx, addr, a.RunID, a.PrimaryIP, w.passwords.Replication)
	case machine.HandOver:
		from, err := ip(a.From)
		if err != nil {
			return err
		}
		return w.pool.HandOver(ctx, from, a.FromRunID, a.ToIP, a.ToRunID, r.Options.HandOverTimeout.Milliseconds())
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
