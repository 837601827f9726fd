package kube

import (
	"strings"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// Labels and annotations the operator sets, under valkey.fsm.dev/.
const (
	LabelCluster = "valkey.fsm.dev/cluster"
	// LabelRole is kept in sync with each pod's replication role by the operator; the client
	// Service selects role=primary and the replicas Service role=replica.
	LabelRole = "valkey.fsm.dev/role"
	// AnnotationRevision on the pod template identifies what a pod runs (image, resources,
	// rendered configuration): a pod whose revision differs from the spec's must be rolled.
	AnnotationRevision = "valkey.fsm.dev/revision"

	RolePrimary = "primary"
	RoleReplica = "replica"
)

// Names of the objects a cluster owns. The client Service takes the cluster's own name, so
// applications connect to <name>.<namespace>.svc.
type Names struct {
	StatefulSet, Headless, Client, Replicas, Config, Auth, PDB string
}

// NamesOf returns the owned objects' names.
func NamesOf(vc *v1alpha1.ValkeyCluster) Names {
	n := vc.Name
	return Names{
		StatefulSet: n,
		Headless:    n + "-nodes",
		Client:      n,
		Replicas:    n + "-replicas",
		Config:      n + "-config",
		Auth:        n + "-auth",
		PDB:         n,
	}
}

// SelectorLabels select every pod of the cluster.
func SelectorLabels(vc *v1alpha1.ValkeyCluster) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":     "valkey",
		"app.kubernetes.io/instance": vc.Name,
		LabelCluster:                 vc.Name,
	}
}

// CommonLabels go on every owned object.
func CommonLabels(vc *v1alpha1.ValkeyCluster) map[string]string {
	l := SelectorLabels(vc)
	l["app.kubernetes.io/managed-by"] = "valkey-operator"
	return l
}

// claimTemplate is the name of the StatefulSet's data claim template: the claim of pod P is
// "data-P".
const claimTemplate = "data"

// PodOfClaim returns the pod a data claim belongs to.
func PodOfClaim(claim string) (string, bool) {
	return strings.CutPrefix(claim, claimTemplate+"-")
}
