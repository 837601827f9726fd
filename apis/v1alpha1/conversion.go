package v1alpha1

import (
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// Every v1alpha1 kind converts to and from its v1beta1 hub (controller-runtime's conversion
// webhook calls these); the *_conversion.go files hold one kind each, and
// AnnotationV1beta1Fields keeps what v1alpha1 cannot hold.
var (
	_ conversion.Convertible = &ValkeyCluster{}
	_ conversion.Convertible = &ValkeyBackup{}
	_ conversion.Convertible = &ValkeyACL{}
	_ conversion.Hub         = &v1beta1.ValkeyCluster{}
	_ conversion.Hub         = &v1beta1.ValkeyBackup{}
	_ conversion.Hub         = &v1beta1.ValkeyACL{}
)
