package admission

import (
	"context"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// acl validates a ValkeyACL: its cluster exists (on CREATE; spec.cluster is immutable) and
// the password Secrets it newly names.
func (v *validator) acl(ctx context.Context, req admission.Request) admission.Response {
	var a, old v1beta1.ValkeyACL
	update, err := v.decode(req, &a, &old)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var problems, warnings []string
	if !update {
		var vc *v1beta1.ValkeyCluster
		if vc, problems, err = v.clusterOf(ctx, "ValkeyACL", a.Namespace, a.Spec.Cluster); err != nil {
			return answer(nil, nil, err)
		}
		warnings = deletingWarning(vc, "user")
	}
	var oldUses []secretUse
	if update {
		oldUses = aclSecretUses(&old.Spec)
	}
	secretProblems, err := v.checkSecrets(ctx, req.UserInfo, a.Namespace, newUses(aclSecretUses(&a.Spec), oldUses))
	return answer(append(problems, secretProblems...), warnings, err)
}
