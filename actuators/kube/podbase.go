package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// basePodSpec is what every pod of a cluster shares, the data nodes' and the sentinels':
// Pod Security "restricted" (Valkey runs as the official image's valkey user, uid and gid 999,
// with nothing but its volume writable), no API access, and the spec's scheduling and image
// knobs. Valkey never calls the API server: the account (spec.serviceAccountName) is for what
// the cluster's policies attach to it (an image pull secret, a workload identity), and its
// token stays out of the pod.
func basePodSpec(vc *v1beta1.ValkeyCluster, grace int64) corev1.PodSpec {
	return corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To(grace),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(ValkeyUID), RunAsGroup: ptr.To(ValkeyUID), FSGroup: ptr.To(ValkeyUID),
			FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
			SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		AutomountServiceAccountToken: ptr.To(false),
		ServiceAccountName:           vc.Spec.ServiceAccountName,
		ImagePullSecrets:             vc.Spec.ImagePullSecrets,
		PriorityClassName:            vc.Spec.PriorityClassName,
		NodeSelector:                 vc.Spec.NodeSelector,
		Tolerations:                  vc.Spec.Tolerations,
	}
}

// restrictedContainer is every container's security context: no privilege, a read-only root.
func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), RunAsNonRoot: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}
