package admission

import (
	"k8s.io/apimachinery/pkg/runtime"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The paths the chart's webhook configurations name (templates/conversion-webhook.yaml),
// one per kind and purpose, all of them v1beta1.
const (
	DefaultClusterPath  = "/default-v1beta1-valkeycluster"
	ValidateClusterPath = "/validate-v1beta1-valkeycluster"
	ValidateBackupPath  = "/validate-v1beta1-valkeybackup"
	ValidateACLPath     = "/validate-v1beta1-valkeyacl"
)

// Register serves the admission webhooks on srv. reader reads from the API server, not from
// a cache: the Secrets a spec names are the user's, which the operator's cache does not hold,
// and a check must see the Secret as it is now. reviews asks the API server what the
// requesting user may do (SubjectAccessReviews). scheme must know v1beta1.
func Register(srv webhook.Server, scheme *runtime.Scheme, reader client.Reader, reviews authorizationv1client.SubjectAccessReviewInterface) {
	decoder := admission.NewDecoder(scheme)
	v := &validator{reader: reader, reviews: reviews, decoder: decoder}
	srv.Register(DefaultClusterPath, &admission.Webhook{Handler: &defaulter{decoder: decoder}})
	srv.Register(ValidateClusterPath, &admission.Webhook{Handler: admission.HandlerFunc(v.cluster)})
	srv.Register(ValidateBackupPath, &admission.Webhook{Handler: admission.HandlerFunc(v.backup)})
	srv.Register(ValidateACLPath, &admission.Webhook{Handler: admission.HandlerFunc(v.acl)})
}
