package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// clusterOf reads the ValkeyCluster a ValkeyACL or ValkeyBackup (kind) names: a problem when
// it does not exist, warnings about it when it does. It is checked on CREATE only: the
// field is immutable, and a cluster deleted later is the operator's to report in status.
func (v *validator) clusterOf(ctx context.Context, kind, ns, name string) (*v1beta1.ValkeyCluster, []string, error) {
	var vc v1beta1.ValkeyCluster
	err := v.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vc)
	if apierrors.IsNotFound(err) {
		return nil, []string{fmt.Sprintf("spec.cluster names ValkeyCluster %s/%s, which does not exist: create the cluster first, or fix the name (a %s belongs to a cluster in its own namespace)",
			ns, name, kind)}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading ValkeyCluster %s/%s (spec.cluster): %w", ns, name, err)
	}
	return &vc, nil, nil
}

// deletingWarning warns that the cluster goes away, and with it what is made for it.
func deletingWarning(vc *v1beta1.ValkeyCluster, kind string) []string {
	if vc == nil || vc.DeletionTimestamp == nil {
		return nil
	}
	return []string{fmt.Sprintf("ValkeyCluster %s/%s is being deleted: this %s will not be applied to it", vc.Namespace, vc.Name, kind)}
}
