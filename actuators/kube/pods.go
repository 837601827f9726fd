package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// ExpandClaim grows the data claim of pod to bytes (the claim templates of a StatefulSet
// are immutable; the provisioner expands each claim). It never shrinks one: a claim already
// as large is left alone. It reports whether it wrote.
func ExpandClaim(ctx context.Context, c client.Client, namespace, pod string, bytes int64) (bool, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: claimTemplate + "-" + pod}, &pvc); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	want := resource.NewQuantity(bytes, resource.BinarySI)
	if pvc.Spec.Resources.Requests.Storage().Cmp(*want) >= 0 {
		return false, nil
	}
	patch := client.MergeFrom(pvc.DeepCopy())
	if pvc.Spec.Resources.Requests == nil {
		pvc.Spec.Resources.Requests = corev1.ResourceList{}
	}
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = *want
	return true, c.Patch(ctx, &pvc, patch)
}
