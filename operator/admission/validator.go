package admission

import (
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// validator holds what the validating webhooks ask the API server with.
type validator struct {
	reader  client.Reader
	reviews authorizationv1client.SubjectAccessReviewInterface
	decoder admission.Decoder
}

// decode reads the request's object into obj and, on UPDATE, its old object into old (which
// stays untouched otherwise). It reports whether there was an old object.
func (v *validator) decode(req admission.Request, obj, old client.Object) (bool, error) {
	if err := v.decoder.Decode(req, obj); err != nil {
		return false, err
	}
	if req.Operation != admissionv1.Update || len(req.OldObject.Raw) == 0 {
		return false, nil
	}
	return true, v.decoder.DecodeRaw(req.OldObject, old)
}

// answer refuses with every problem at once (a user fixes them all in one go), or admits
// with the warnings; err is a failure to ask the API server, which refuses too, since an
// unchecked spec is what the webhook exists to stop.
func answer(problems, warnings []string, err error) admission.Response {
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if len(problems) > 0 {
		return admission.Denied(strings.Join(problems, "; ")).WithWarnings(warnings...)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}
