package operatorsuite

import (
	"context"
	"testing"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// restoreInPlace restores the running cluster name from src as a user must: a restore into a
// running cluster discards every write acknowledged since the backup, so it is refused unless
// discardCurrentData says that is meant, a field of v1beta1 only (v1alpha1 refuses the change
// outright). It writes spec.restoreFrom on the cluster's v1beta1 form, again on a conflict
// (the operator writes status all the time).
func restoreInPlace(t *testing.T, ctx context.Context, ns, name string, src v1beta1.RestoreSource) {
	t.Helper()
	src.DiscardCurrentData = true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var hub v1beta1.ValkeyCluster
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &hub); err != nil {
			return err
		}
		hub.Spec.RestoreFrom = src.DeepCopy()
		return k.Update(ctx, &hub)
	})
	if err != nil {
		t.Fatalf("restoring %s/%s in place from %+v: %v", ns, name, src, err)
	}
}
