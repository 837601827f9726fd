package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// sentinelMonitor tells a sentinel, at the address and with the id the action was decided on,
// to monitor the group (actuators/valkey SentinelMonitor), reaching the data nodes as the
// sentinels' own user.
func sentinelMonitor(ctx context.Context, x actuation, a machine.SentinelMonitor) error {
	return x.w.pool.SentinelMonitor(ctx, a.IP, a.ID, a.PrimaryIP, a.Settings, x.w.passwords.Sentinel)
}

// sentinelRemove makes a sentinel forget the group (actuators/valkey SentinelRemove).
func sentinelRemove(ctx context.Context, x actuation, a machine.SentinelRemove) error {
	return x.w.pool.SentinelRemove(ctx, a.IP, a.ID)
}

// sentinelReset makes a sentinel find the group's replicas and sentinels again (actuators/valkey
// SentinelReset).
func sentinelReset(ctx context.Context, x actuation, a machine.SentinelReset) error {
	return x.w.pool.SentinelReset(ctx, a.IP, a.ID)
}

// holdBack sets a replica to replica-priority 0 before a planned hand-over (actuators/valkey
// HoldBack).
func holdBack(ctx context.Context, x actuation, a machine.HoldBack) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	return x.w.pool.HoldBack(ctx, addr, a.RunID)
}

// sentinelHandOver hands the primary role over through a sentinel (actuators/valkey
// SentinelHandOver), waiting for the target to catch up as long as a hand-over of the
// Replication topology does.
func sentinelHandOver(ctx context.Context, x actuation, a machine.SentinelHandOver) error {
	from, err := x.ip(a.From)
	if err != nil {
		return err
	}
	return x.w.pool.SentinelHandOver(ctx, a.IP, a.ID, from, a.FromRunID, a.ToIP, a.ToRunID, x.r.Options.HandOverTimeout)
}

// rollSentinel deletes a sentinel's pod so that its StatefulSet makes it again from the
// template at the action's revision (machine.RollSentinel). Only the pod that ran the sentinel
// decided for goes: at the address it was seen at, answering with the id it was seen with when
// it answered then; a pod that is already going, or runs the revision, is left alone.
func rollSentinel(ctx context.Context, x actuation, a machine.RollSentinel) error {
	r, vc := x.r, x.vc
	var pod corev1.Pod
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: a.Sentinel}, &pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	for k, v := range kube.SentinelSelectorLabels(vc) {
		if pod.Labels[k] != v {
			return fmt.Errorf("pod %s is not one of this cluster's sentinels (label %s=%q)", a.Sentinel, k, pod.Labels[k])
		}
	}
	if pod.DeletionTimestamp != nil || sentinelPodRevision(&pod) == a.Revision {
		return nil
	}
	if a.IP != "" && pod.Status.PodIP != a.IP {
		return fmt.Errorf("sentinel %s runs at %s now, the restart was decided for it at %s: deciding again", a.Sentinel, pod.Status.PodIP, a.IP)
	}
	if a.ID != "" {
		if err := x.w.pool.SentinelAnswersAs(ctx, a.IP, a.ID); err != nil {
			return err
		}
	}
	if err := kube.DeletePod(ctx, r.Client, &pod); err != nil {
		return err
	}
	r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "roll-sentinel").Inc()
	r.event(vc, corev1.EventTypeNormal, "RollingSentinel", "restarting sentinel %s at revision %s (its file, id and votes kept on its volume)", a.Sentinel, a.Revision)
	return nil
}
