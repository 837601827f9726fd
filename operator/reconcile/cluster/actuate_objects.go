package cluster

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// The actuators of the Kubernetes objects: the StatefulSets (and, with them, the pods and
// claims), the volumes, the pods' restarts, and the nodes' certificates.

// ensureObjects writes the objects the action asks for, once machine.CheckScaleDown agrees
// with what this turn sees, then deletes the shards it no longer wants.
func ensureObjects(ctx context.Context, x actuation, a machine.EnsureObjects) error {
	r, vc, w := x.r, x.vc, x.w
	desired, err := kube.ForAction(w.desired, a)
	if err != nil {
		return err
	}
	removed, err := machine.CheckScaleDown(scaleDownOf(ctx, w, a))
	if err != nil {
		return err
	}
	res, err := kube.Apply(ctx, r.Client, r.apiReader(), desired, true)
	if err != nil {
		return err
	}
	r.recordApply(ctx, vc, res)
	for _, shard := range removed {
		sts := w.sets[shard.Shard]
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
}

func expandVolumes(ctx context.Context, x actuation, a machine.ExpandVolumes) error {
	r, vc := x.r, x.vc
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
}

func rollPod(ctx context.Context, x actuation, a machine.RollPod) error {
	r, vc := x.r, x.vc
	p := x.w.pods[a.Node]
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

func reloadCertificate(ctx context.Context, x actuation, a machine.ReloadCertificate) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	if err := x.w.pool.ReloadCertificate(ctx, addr, a.RunID); err != nil {
		return err
	}
	x.r.event(x.vc, corev1.EventTypeNormal, "CertificateReloaded", "%s loaded its certificate files again (the Secret serves serial %s)", a.Node, a.Serial)
	return nil
}
