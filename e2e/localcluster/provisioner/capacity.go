package provisioner

import (
	"context"
	"fmt"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// capacity is the storage a claim may have at most: Options.Capacity when set, else what the
// file system of Root has free now (for an unprivileged user), as a provisioner that reports
// its capacity (CSIStorageCapacity) says of a node's disk.
func (p *Provisioner) capacity() (resource.Quantity, error) {
	if p.opts.Capacity != nil {
		return *p.opts.Capacity, nil
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(p.opts.Root, &st); err != nil {
		return resource.Quantity{}, fmt.Errorf("reading the free space of %s: %w", p.opts.Root, err)
	}
	return *resource.NewQuantity(int64(st.Bavail)*st.Bsize, resource.BinarySI), nil
}

// errInsufficientCapacity is a claim larger than the storage: it stays Pending, and is
// tried again with the queue's back-off (the space may be freed, or the claim changed).
type errInsufficientCapacity struct {
	want, have resource.Quantity
}

func (e errInsufficientCapacity) Error() string {
	return fmt.Sprintf("insufficient capacity: the claim asks for %s, the storage has %s", e.want.String(), e.have.String())
}

// fits says why a claim of size cannot be provisioned (nil when it can).
func (p *Provisioner) fits(size resource.Quantity) error {
	have, err := p.capacity()
	if err != nil {
		return err
	}
	if size.Cmp(have) > 0 {
		have = *resource.NewQuantity(have.Value(), resource.BinarySI) // "52Gi", not bytes
		return errInsufficientCapacity{want: size, have: have}
	}
	return nil
}

// claimEvent records an Event on a claim, as the external provisioner does: what
// `kubectl describe pvc` shows under Events.
func (p *Provisioner) claimEvent(ctx context.Context, pvc *corev1.PersistentVolumeClaim, typ, reason, msg string) {
	now := metav1.Now()
	_, err := p.cs.CoreV1().Events(pvc.Namespace).Create(ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pvc.Name + ".", Namespace: pvc.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion},
		Type: typ, Reason: reason, Message: msg,
		Source:         corev1.EventSource{Component: p.opts.Provisioner},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}, metav1.CreateOptions{})
	if err != nil {
		p.log.Warn("recording an event", "claim", pvc.Namespace+"/"+pvc.Name, "reason", reason, "err", err)
	}
}
