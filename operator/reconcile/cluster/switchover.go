package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// switchoverRequest turns the switchover annotation into the machine's Switchover request.
// "auto" is resolved once, to the most caught-up linked replica, and written back, so that
// every later observation names the same target (a changing target would abort the
// hand-over as stale). A request that is done or cannot be carried out is removed.
func (r *Reconciler) switchoverRequest(ctx context.Context, vc *v1beta1.ValkeyCluster, obs machine.Observation, p machine.Persisted) (*machine.Switchover, error) {
	to := vc.Annotations[v1beta1.AnnotationSwitchoverTo]
	if to == "" {
		return nil, nil
	}
	primary := ""
	if len(p.Shards) > 0 {
		primary = p.Shards[0].Primary
	}
	var primaryIP string
	for _, n := range obs.Nodes {
		if n.Name == primary {
			primaryIP = n.Pod.IP
		}
	}
	if to == v1beta1.SwitchoverAuto {
		var best *machine.Node
		for i, n := range obs.Nodes {
			if n.Reachable && n.Valkey.Role == machine.RoleReplica && n.Valkey.LinkUp && n.Valkey.PrimaryHost == primaryIP &&
				(best == nil || n.Valkey.Offset > best.Valkey.Offset) {
				best = &obs.Nodes[i]
			}
		}
		if best == nil {
			r.event(vc, corev1.EventTypeWarning, "SwitchoverRefused", "no replica is linked to the primary %s: nothing to switch over to", primary)
			return nil, r.setSwitchover(ctx, vc, "")
		}
		r.event(vc, corev1.EventTypeNormal, "SwitchoverTarget", "switchover to %s, the most caught-up replica (offset %d)", best.Name, best.Valkey.Offset)
		if err := r.setSwitchover(ctx, vc, best.Name); err != nil {
			return nil, err
		}
		to = best.Name
	}
	sw := &machine.Switchover{Shard: 0, To: to}
	switch machine.AnswerSwitchover(p, obs, sw) {
	case machine.SwitchoverRefused:
		r.event(vc, corev1.EventTypeWarning, "SwitchoverRefused", "%s is not a pod of this cluster", to)
		return nil, r.setSwitchover(ctx, vc, "")
	case machine.SwitchoverDone:
		r.event(vc, corev1.EventTypeNormal, "SwitchoverDone", "%s is the primary", to)
		return nil, r.setSwitchover(ctx, vc, "")
	}
	return sw, nil
}

// setSwitchover writes (or, with "", removes) the switchover annotation.
func (r *Reconciler) setSwitchover(ctx context.Context, vc *v1beta1.ValkeyCluster, to string) error {
	return r.setAnnotation(ctx, vc, v1beta1.AnnotationSwitchoverTo, to, "switchover-annotation")
}

// setAnnotation writes (or, with "", removes) one of the annotations users give the operator
// requests in, once the operator has answered the request.
func (r *Reconciler) setAnnotation(ctx context.Context, vc *v1beta1.ValkeyCluster, key, value, kind string) error {
	patch := client.MergeFrom(vc.DeepCopy())
	if value == "" {
		delete(vc.Annotations, key)
	} else {
		vc.Annotations[key] = value
	}
	if err := r.Client.Patch(ctx, vc, patch); err != nil {
		return err
	}
	r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, kind).Inc()
	return nil
}
