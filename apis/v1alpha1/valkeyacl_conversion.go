package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// aclHubFields are the parts of a v1beta1 ValkeyACL a v1alpha1 one has no field for.
type aclHubFields struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConvertTo converts this ValkeyACL to the hub version, v1beta1.
func (src *ValkeyACL) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*v1beta1.ValkeyACL)
	if !ok {
		return fmt.Errorf("a v1alpha1 ValkeyACL converts to a v1beta1 ValkeyACL, not %T", dstRaw)
	}
	in := src.DeepCopy()
	dst.ObjectMeta = in.ObjectMeta
	dst.Spec = v1beta1.ValkeyACLSpec{
		Cluster: in.Spec.Cluster, User: in.Spec.User,
		Rules:   convertSlice(in.Spec.Rules, cast[v1beta1.ACLRule, ACLRule]),
		Enabled: in.Spec.Enabled,
		PasswordSecretRefs: convertSlice(in.Spec.PasswordSecrets, func(r SecretKeyRef) v1beta1.SecretKeyRef {
			return v1beta1.SecretKeyRef{Name: r.Name, Key: r.Key}
		}),
		AllowAdmin: in.Spec.AllowAdmin,
	}
	dst.Status = v1beta1.ValkeyACLStatus{
		ObservedGeneration: in.Status.ObservedGeneration, Phase: in.Status.Phase,
		Reason: in.Status.Reason, Applied: in.Status.Applied,
	}
	var kept aclHubFields
	found, err := takeHubFields(&dst.ObjectMeta, &kept)
	if err != nil || !found {
		return err
	}
	dst.Status.Conditions = kept.Conditions
	return nil
}

// ConvertFrom converts the hub version, v1beta1, to this ValkeyACL.
func (dst *ValkeyACL) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*v1beta1.ValkeyACL)
	if !ok {
		return fmt.Errorf("a v1alpha1 ValkeyACL converts from a v1beta1 ValkeyACL, not %T", srcRaw)
	}
	in := src.DeepCopy()
	dst.ObjectMeta = in.ObjectMeta
	dst.Spec = ValkeyACLSpec{
		Cluster: in.Spec.Cluster, User: in.Spec.User,
		Rules:   convertSlice(in.Spec.Rules, cast[ACLRule, v1beta1.ACLRule]),
		Enabled: in.Spec.Enabled,
		PasswordSecrets: convertSlice(in.Spec.PasswordSecretRefs, func(r v1beta1.SecretKeyRef) SecretKeyRef {
			return SecretKeyRef{Name: r.Name, Key: r.Key}
		}),
		AllowAdmin: in.Spec.AllowAdmin,
	}
	dst.Status = ValkeyACLStatus{
		ObservedGeneration: in.Status.ObservedGeneration, Phase: in.Status.Phase,
		Reason: in.Status.Reason, Applied: in.Status.Applied,
	}
	return keepHubFields(&dst.ObjectMeta, aclHubFields{Conditions: in.Status.Conditions})
}
