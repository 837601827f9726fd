package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// SetRole keeps a pod's role label equal to what its Valkey process reports, which is what
// moves the client Service to a new primary. It writes only when the label differs; an empty
// role removes the label (the pod serves no Service until its role is known).
func SetRole(ctx context.Context, c client.Client, pod *corev1.Pod, role string) (bool, error) {
	if pod.Labels[LabelRole] == role {
		return false, nil
	}
	patch := client.MergeFrom(pod.DeepCopy())
	p := pod.DeepCopy()
	if role == "" {
		delete(p.Labels, LabelRole)
	} else {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[LabelRole] = role
	}
	if err := c.Patch(ctx, p, patch); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return true, nil
}

// DeletePod deletes the pod if it is still the one decided about (same UID), so that the
// StatefulSet re-creates it at the current revision.
func DeletePod(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	err := c.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// ExpandClaims grows every data claim of the cluster to spec.storage.size (the claim
// templates of a StatefulSet are immutable; the provisioner expands each claim). Claims are
// never shrunk: the API refuses a smaller size.
func ExpandClaims(ctx context.Context, c client.Client, vc *v1alpha1.ValkeyCluster) (int, error) {
	if vc.Spec.Storage.Size == nil {
		return 0, nil
	}
	want := *vc.Spec.Storage.Size
	var claims corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &claims, client.InNamespace(vc.Namespace), client.MatchingLabels(SelectorLabels(vc))); err != nil {
		return 0, err
	}
	n := 0
	for i := range claims.Items {
		pvc := &claims.Items[i]
		cur := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		if cur.Cmp(want) >= 0 {
			continue
		}
		patch := client.MergeFrom(pvc.DeepCopy())
		if pvc.Spec.Resources.Requests == nil {
			pvc.Spec.Resources.Requests = corev1.ResourceList{}
		}
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = want.DeepCopy()
		if err := c.Patch(ctx, pvc, patch); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
