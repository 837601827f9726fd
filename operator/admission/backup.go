package admission

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// backup validates a new ValkeyBackup: its cluster exists. Nothing else in its spec can be
// wrong outside the object (the store is the cluster's, checked when the cluster was), and
// an update cannot change the cluster (CEL), so an UPDATE is admitted as it is.
func (v *validator) backup(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	var b v1beta1.ValkeyBackup
	if err := v.decoder.Decode(req, &b); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	vc, problems, err := v.clusterOf(ctx, "ValkeyBackup", b.Namespace, b.Spec.Cluster)
	warnings := deletingWarning(vc, "backup")
	if vc != nil && vc.Spec.Backup == nil {
		warnings = append(warnings, fmt.Sprintf("ValkeyCluster %s/%s has no spec.backup: this backup fails until spec.backup.store says where backups go", vc.Namespace, vc.Name))
	}
	return answer(problems, warnings, err)
}
