package admission

import (
	"context"
	"encoding/json"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// defaulter writes v1beta1.SetDefaults into a ValkeyCluster on CREATE and UPDATE. SetDefaults
// never overrides a set value and is idempotent, so an update only fills in what the user
// removed (an unset replicas comes back as its topology's default) or what an older object
// never had. The CEL rules that compare with the old object count an unset replicas as its
// default, so a defaulted and an unset value compare equal there.
type defaulter struct {
	decoder admission.Decoder
}

func (d *defaulter) Handle(_ context.Context, req admission.Request) admission.Response {
	var vc v1beta1.ValkeyCluster
	if err := d.decoder.Decode(req, &vc); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	v1beta1.SetDefaults(&vc.Spec)
	defaulted, err := json.Marshal(&vc)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, defaulted)
}
