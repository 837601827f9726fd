package provisioner

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// expand grows a bound claim whose request exceeds its status capacity: first the PV's
// capacity, then the claim's status, in the order of the external resizer, so that a claim
// never shows more than its volume has. The API server has already checked that the class
// allows expansion and that the request only grows; a directory needs no resizing.
func (p *Provisioner) expand(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	want, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil
	}
	if have, ok := pvc.Status.Capacity[corev1.ResourceStorage]; ok && want.Cmp(have) <= 0 {
		return nil
	}
	pv, err := p.volumes.Get(pvc.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !p.ownsVolume(pv) {
		return nil
	}
	log := p.log.With("claim", pvc.Namespace+"/"+pvc.Name, "pv", pv.Name, "size", want.String())

	if have := pv.Spec.Capacity[corev1.ResourceStorage]; have.Cmp(want) < 0 {
		grow := want.DeepCopy()
		grow.Sub(have)
		if err := p.fits(grow); err != nil {
			// As the external resizer reports a failed expansion; the claim keeps its size.
			p.claimEvent(ctx, pvc, corev1.EventTypeWarning, "VolumeResizeFailed", fmt.Sprintf("resize volume %q by resizer %q failed: %v", pv.Name, p.opts.Provisioner, err))
			return err
		}
		pv = pv.DeepCopy()
		pv.Spec.Capacity[corev1.ResourceStorage] = want
		if _, err := p.cs.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("expanding PV: %w", err)
		}
		log.Info("expanded volume")
	}

	pvc = pvc.DeepCopy()
	if pvc.Status.Capacity == nil {
		pvc.Status.Capacity = corev1.ResourceList{}
	}
	pvc.Status.Capacity[corev1.ResourceStorage] = want
	// What the resizer leaves after an expansion that needs no node step: the size it
	// allocated, no resize in progress, no Resizing/FileSystemResizePending condition.
	if pvc.Status.AllocatedResources == nil {
		pvc.Status.AllocatedResources = corev1.ResourceList{}
	}
	pvc.Status.AllocatedResources[corev1.ResourceStorage] = want
	delete(pvc.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	conds := pvc.Status.Conditions[:0]
	for _, c := range pvc.Status.Conditions {
		if c.Type != corev1.PersistentVolumeClaimResizing && c.Type != corev1.PersistentVolumeClaimFileSystemResizePending {
			conds = append(conds, c)
		}
	}
	pvc.Status.Conditions = conds
	if _, err := p.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating claim capacity: %w", err)
	}
	log.Info("expanded claim")
	return nil
}
