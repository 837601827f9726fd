package provisioner

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// syncClaim provisions a pending claim of ours or expands a bound one.
func (p *Provisioner) syncClaim(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pvc, err := p.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // the binder releases its volume; syncVolume reclaims it
	}
	if err != nil || !p.ownsClaim(pvc) || pvc.DeletionTimestamp != nil {
		return err
	}
	switch {
	case pvc.Spec.VolumeName == "" && pvc.Status.Phase != corev1.ClaimBound:
		return p.provision(ctx, pvc)
	case pvc.Status.Phase == corev1.ClaimBound:
		return p.expand(ctx, pvc)
	}
	return nil
}

// volumeName is the PV name for a claim. It is derived from the claim's UID, as the
// external provisioners do, so that provisioning twice (a retry, a stale cache) finds the
// PV of the first attempt instead of making a second one.
func volumeName(pvc *corev1.PersistentVolumeClaim) string {
	return "pvc-" + string(pvc.UID)
}

// provision creates the directory and a PV pre-bound to the claim; the binder completes
// the binding.
func (p *Provisioner) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	log := p.log.With("claim", pvc.Namespace+"/"+pvc.Name)
	if reason := unsupported(pvc); reason != "" {
		log.Warn("not provisioning claim", "reason", reason)
		return nil
	}
	name := volumeName(pvc)
	if _, err := p.volumes.Get(name); err == nil {
		return nil // provisioned already, waiting for the binder
	}
	size, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok || size.IsZero() {
		log.Warn("not provisioning claim", "reason", "no storage request")
		return nil
	}
	if err := p.fits(size); err != nil {
		// The external provisioner's report: a Normal Provisioning, then a Warning
		// ProvisioningFailed on the claim, which stays Pending and is tried again.
		p.claimEvent(ctx, pvc, corev1.EventTypeNormal, "Provisioning", fmt.Sprintf("External provisioner is provisioning volume for claim %q", pvc.Namespace+"/"+pvc.Name))
		p.claimEvent(ctx, pvc, corev1.EventTypeWarning, "ProvisioningFailed", fmt.Sprintf("failed to provision volume with StorageClass %q: %v", p.opts.StorageClass, err))
		return err
	}

	dir := p.dirOf(name)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("creating volume directory: %w", err)
	}
	// World-writable like the hostPath provisioners: a Pod may run as any user and must be
	// able to write its volume; the mode given to MkdirAll is cut by the umask.
	if err := os.Chmod(dir, 0o777); err != nil {
		return fmt.Errorf("creating volume directory: %w", err)
	}

	hostPathType := corev1.HostPathDirectory
	fs := corev1.PersistentVolumeFilesystem
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{annProvisionedBy: p.opts.Provisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes: pvc.Spec.AccessModes,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hostPathType},
			},
			ClaimRef: &corev1.ObjectReference{
				Kind:            "PersistentVolumeClaim",
				APIVersion:      "v1",
				Namespace:       pvc.Namespace,
				Name:            pvc.Name,
				UID:             pvc.UID,
				ResourceVersion: pvc.ResourceVersion,
			},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              p.opts.StorageClass,
			VolumeMode:                    &fs,
		},
	}
	if _, err := p.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating PV %s: %w", name, err)
	}
	log.Info("provisioned", "pv", name, "path", dir, "size", size.String())
	return nil
}

// unsupported says why a claim cannot be provisioned as a plain directory, or "".
func unsupported(pvc *corev1.PersistentVolumeClaim) string {
	switch {
	case pvc.Spec.Selector != nil:
		return "claims with a selector cannot be provisioned dynamically"
	case pvc.Spec.DataSource != nil || pvc.Spec.DataSourceRef != nil:
		return "data sources (clones, snapshots) are not supported"
	case pvc.Spec.VolumeMode != nil && *pvc.Spec.VolumeMode == corev1.PersistentVolumeBlock:
		return "block volumes are not supported"
	}
	return ""
}
