package kube

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// Labels and annotations the operator sets, under valkey.fsm.dev/.
const (
	LabelCluster = "valkey.fsm.dev/cluster"
	// LabelRole is kept in sync with each pod's replication role by the operator; the client
	// Service selects role=primary and the replicas Service role=replica.
	LabelRole = "valkey.fsm.dev/role"
	// LabelShard is the shard number of a Cluster topology's pods, claims and StatefulSets.
	LabelShard = "valkey.fsm.dev/shard"
	// AnnotationRevision on the pod template identifies what a pod runs (image, resources,
	// rendered configuration): a pod whose revision differs from the spec's must be rolled.
	AnnotationRevision = "valkey.fsm.dev/revision"
	// AnnotationTLS on the pod template says how the pods of that revision accept connections
	// (valkey.TLSMode; absent: plain only): the operator connects to each pod as it runs.
	AnnotationTLS = "valkey.fsm.dev/tls"

	RolePrimary = "primary"
	RoleReplica = "replica"
)

// Names of the objects a cluster owns. The client Service takes the cluster's own name, so
// applications connect to <name>.<namespace>.svc.
type Names struct {
	StatefulSet, Headless, Client, Replicas, Config, Auth, PDB string
	// Policy is spec.networkPolicy's NetworkPolicy's, BusPolicy the cluster bus's;
	// Certificate the cert-manager Certificate's and its Secret's (v1beta1.TLSSecretName).
	Policy, BusPolicy, Certificate string
	// Sharded is true for topology Cluster: one StatefulSet per shard (ShardSet).
	Sharded bool
}

// ShardSet is the name of shard s's StatefulSet: the cluster's name for the one StatefulSet of
// a replication group, <name>-s<s> for each shard of a Cluster topology (so a shard can be
// removed whole, and its pods are <name>-s<s>-<ordinal>).
func (n Names) ShardSet(s int) string {
	if !n.Sharded {
		return n.StatefulSet
	}
	return fmt.Sprintf("%s-s%d", n.StatefulSet, s)
}

// PodName is the pod of shard s at ordinal.
func (n Names) PodName(s, ordinal int) string {
	return fmt.Sprintf("%s-%d", n.ShardSet(s), ordinal)
}

// ShardAndOrdinal parses a pod name of the cluster into its shard and ordinal.
func (n Names) ShardAndOrdinal(pod string) (shard, ordinal int, ok bool) {
	rest, found := strings.CutPrefix(pod, n.StatefulSet+"-")
	if !found {
		return 0, 0, false
	}
	if n.Sharded {
		s, o, found := strings.Cut(rest, "-")
		num, isShard := strings.CutPrefix(s, "s")
		if !found || !isShard {
			return 0, 0, false
		}
		if shard, ok = number(num); !ok {
			return 0, 0, false
		}
		rest = o
	}
	ordinal, ok = number(rest)
	return shard, ordinal, ok
}

// number parses a non-negative decimal without sign or leading zeros (as ordinals are written).
func number(s string) (int, bool) {
	v, err := strconv.Atoi(s)
	return v, err == nil && v >= 0 && strconv.Itoa(v) == s
}

// NamesOf returns the owned objects' names.
func NamesOf(vc *v1beta1.ValkeyCluster) Names {
	n := vc.Name
	return Names{
		StatefulSet: n,
		Headless:    n + "-nodes",
		Client:      n,
		Replicas:    n + "-replicas",
		Config:      n + "-config",
		Auth:        n + "-auth",
		PDB:         n,
		Policy:      n,
		BusPolicy:   n + "-bus",
		Certificate: v1beta1.IssuedSecretName(vc),
		Sharded:     vc.Spec.Topology == v1beta1.TopologyCluster,
	}
}

// SelectorLabels select every data pod of the cluster.
func SelectorLabels(vc *v1beta1.ValkeyCluster) map[string]string { return selectorOf(vc, "valkey") }

// selectorOf selects the cluster's pods of app (the data nodes' valkey, the sentinels'
// valkey-sentinel).
func selectorOf(vc *v1beta1.ValkeyCluster, app string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":     app,
		"app.kubernetes.io/instance": vc.Name,
		LabelCluster:                 vc.Name,
	}
}

// CommonLabels go on every owned object.
func CommonLabels(vc *v1beta1.ValkeyCluster) map[string]string { return managed(SelectorLabels(vc)) }

// managed is l with the operator's managed-by label.
func managed(l map[string]string) map[string]string {
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
