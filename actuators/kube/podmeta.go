package kube

import (
	"encoding/json"
	"hash"
	"maps"
	"strings"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// operatorPrefix is the prefix of every label and annotation the operator sets on its pods.
const operatorPrefix = "valkey.fsm.dev/"

// The pods' own labels and annotations (spec.podLabels, spec.podAnnotations) are part of the
// revision: changing one rolls the pods, replicas first and primaries last after a hand-over,
// as any change of the pod template does. Kubernetes would let the operator patch them onto
// the running pods instead, which is lighter, and is not what it does, because:
//   - much of what users put there is read once, when a pod is created (a mesh's sidecar
//     injection and its settings, a CNI's or a security profile's annotations): a patched pod
//     would show a value it does not run by;
//   - the StatefulSets roll OnDelete: a patch would leave the running pods' metadata apart from
//     their template, and a pod re-created later would differ from its siblings of the same
//     revision;
//   - the roll is the one path the machine already drives safely, for every other change.
//
// Unset (the case of every cluster made before these fields existed), they add nothing to the
// revision, so an upgrade rolls no pod.

// podLabels are the labels of the pod template: the user's, under the operator's own (the
// selector's, which win on a clash). A user key under valkey.fsm.dev/ is dropped, whatever
// its value: the CRD refuses those, and a role label from a template would put a pod into a
// client Service before the operator has seen its role.
func podLabels(vc *v1beta1.ValkeyCluster) map[string]string {
	l := userKeys(vc.Spec.PodLabels, CommonLabels(vc))
	maps.Copy(l, SelectorLabels(vc))
	return l
}

// podAnnotations are the user's annotations for the pod template, without the operator's
// (which the caller sets over them).
func podAnnotations(vc *v1beta1.ValkeyCluster) map[string]string {
	return userKeys(vc.Spec.PodAnnotations, nil)
}

// userKeys is user without the keys the operator owns: those in owned and those under
// operatorPrefix.
func userKeys(user, owned map[string]string) map[string]string {
	out := make(map[string]string, len(user))
	for k, v := range user {
		if _, ok := owned[k]; ok || strings.HasPrefix(k, operatorPrefix) {
			continue
		}
		out[k] = v
	}
	return out
}

// hashPodMeta adds the user's pod labels and annotations to the revision hash h, and nothing
// when there are none.
func hashPodMeta(h hash.Hash, vc *v1beta1.ValkeyCluster) {
	labels, annotations := userKeys(vc.Spec.PodLabels, CommonLabels(vc)), podAnnotations(vc)
	if len(labels) == 0 && len(annotations) == 0 {
		return
	}
	// encoding/json writes map keys sorted: the same maps hash the same.
	_ = json.NewEncoder(h).Encode(struct {
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}{labels, annotations})
}
