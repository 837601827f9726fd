package conversionwebhook

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// Path is where the conversion webhook is served; the CRDs' spec.conversion names it.
const Path = "/convert"

// AddToScheme adds both served versions: the webhook decodes what the API server sends
// (either version) and allocates the other, so it needs both; a client that reads or writes
// either version needs them too.
func AddToScheme(s *runtime.Scheme) error {
	if err := v1alpha1.AddToScheme(s); err != nil {
		return err
	}
	return v1beta1.AddToScheme(s)
}

// Scheme knows the built-in kinds and both versions of the operator's kinds.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = AddToScheme(s)
	return s
}

// Register serves the conversion of every kind at Path on srv. The kinds convert themselves
// (v1beta1 is the hub, v1alpha1 implements Convertible), so the registry of separate
// converters stays empty.
func Register(srv webhook.Server, scheme *runtime.Scheme) {
	srv.Register(Path, conversion.NewWebhookHandler(scheme, conversion.NewRegistry()))
}
