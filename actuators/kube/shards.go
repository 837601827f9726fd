package kube

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeleteShard removes a shard of the Cluster topology whose nodes have left the cluster: its
// StatefulSet (only the object read, by UID: a set re-created meanwhile is not this one) and the
// claims of its pods (those labelled as its volume claim template labels them, shard included),
// which the StatefulSet's retention policy keeps on deletion. The caller checks first that
// nothing on them is needed (every slot moved away, every node empty and off the bus).
func DeleteShard(ctx context.Context, c client.Client, sts *appsv1.StatefulSet) (Result, error) {
	var res Result
	err := c.Delete(ctx, sts, client.Preconditions{UID: &sts.UID}, client.PropagationPolicy("Background"))
	switch {
	case err == nil:
		res.Deleted = append(res.Deleted, "StatefulSet/"+sts.Name)
	case !apierrors.IsNotFound(err):
		return res, fmt.Errorf("deleting StatefulSet/%s: %w", sts.Name, err)
	}
	var errs []error
	for _, t := range sts.Spec.VolumeClaimTemplates {
		if len(t.Labels) == 0 || t.Labels[LabelShard] == "" {
			return res, fmt.Errorf("StatefulSet/%s: its claim template %q has no shard label; not deleting claims by it", sts.Name, t.Name)
		}
		var claims corev1.PersistentVolumeClaimList
		if err := c.List(ctx, &claims, client.InNamespace(sts.Namespace), client.MatchingLabels(t.Labels)); err != nil {
			errs = append(errs, fmt.Errorf("listing the claims of StatefulSet/%s: %w", sts.Name, err))
			continue
		}
		for i := range claims.Items {
			pvc := &claims.Items[i]
			if err := c.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting PersistentVolumeClaim/%s: %w", pvc.Name, err))
				continue
			}
			res.Deleted = append(res.Deleted, "PersistentVolumeClaim/"+pvc.Name)
		}
	}
	return res, errors.Join(errs...)
}
