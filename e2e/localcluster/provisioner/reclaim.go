package provisioner

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// syncVolume reclaims a Released PV of ours with reclaim policy Delete: it removes the
// directory, then the PV. When a PV of ours is gone, for whatever reason, its directory goes
// too, so that no directory outlives its volume.
func (p *Provisioner) syncVolume(ctx context.Context, name string) error {
	pv, err := p.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return p.removeDir(p.dirOf(name))
	}
	if err != nil || !p.ownsVolume(pv) {
		return err
	}
	if pv.Status.Phase == corev1.VolumeBound || pv.Spec.ClaimRef == nil {
		// A bound PV's claim may have grown while the PV lagged behind: let the claim's sync
		// (which this event may be the answer to) finish the expansion.
		if ref := pv.Spec.ClaimRef; ref != nil {
			p.queue.Add(claimKeyPrefix + ref.Namespace + "/" + ref.Name)
		}
		return nil
	}
	if pv.Status.Phase != corev1.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return nil
	}
	if pv.DeletionTimestamp != nil {
		return nil // deleted by us already; pv-protection is removing its finalizer
	}
	path, ok := PathOf(pv)
	if !ok || !p.underRoot(path) {
		p.log.Warn("not removing a released volume outside the root", "pv", name, "path", path)
		return nil
	}
	if err := p.removeDir(path); err != nil {
		return err
	}
	err = p.cs.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pv.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting PV %s: %w", name, err)
	}
	p.log.Info("reclaimed", "pv", name, "path", path)
	return nil
}

// removeDir removes a volume directory and everything in it; a missing one is fine.
func (p *Provisioner) removeDir(path string) error {
	if !p.underRoot(path) {
		return nil
	}
	if _, err := os.Lstat(path); os.IsNotExist(err) {
		return nil
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("removing volume directory: %w", err)
	}
	return nil
}
