package provisioner

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EnsureStorageClass creates the provisioner's StorageClass: the cluster's default class,
// with expansion allowed, reclaim policy Delete and immediate binding. An existing class of
// that name is accepted when its immutable fields match, and its default annotation and
// allowVolumeExpansion are set if missing; a class of another provisioner is an error.
func (p *Provisioner) EnsureStorageClass(ctx context.Context) error {
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingImmediate
	expand := true
	want := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        p.opts.StorageClass,
			Annotations: map[string]string{annDefaultClass: "true"},
		},
		Provisioner:          p.opts.Provisioner,
		ReclaimPolicy:        &reclaim,
		VolumeBindingMode:    &binding,
		AllowVolumeExpansion: &expand,
	}
	classes := p.cs.StorageV1().StorageClasses()
	_, err := classes.Create(ctx, want, metav1.CreateOptions{})
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return err
	}

	have, err := classes.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	switch {
	case have.Provisioner != want.Provisioner:
		return fmt.Errorf("provisioner: storage class %s exists with provisioner %s, not %s", have.Name, have.Provisioner, want.Provisioner)
	case have.ReclaimPolicy != nil && *have.ReclaimPolicy != reclaim:
		return fmt.Errorf("provisioner: storage class %s exists with reclaim policy %s, not %s", have.Name, *have.ReclaimPolicy, reclaim)
	case have.VolumeBindingMode != nil && *have.VolumeBindingMode != binding:
		return fmt.Errorf("provisioner: storage class %s exists with volume binding mode %s, not %s", have.Name, *have.VolumeBindingMode, binding)
	}
	if have.Annotations[annDefaultClass] == "true" && have.AllowVolumeExpansion != nil && *have.AllowVolumeExpansion {
		return nil
	}
	have = have.DeepCopy()
	if have.Annotations == nil {
		have.Annotations = map[string]string{}
	}
	have.Annotations[annDefaultClass] = "true"
	have.AllowVolumeExpansion = &expand
	_, err = classes.Update(ctx, have, metav1.UpdateOptions{})
	return err
}
