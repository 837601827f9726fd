package manager

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
)

// cacheOptions keeps in memory only what the operator made: every object it creates carries
// the cluster label, so the Secrets, Pods, claims and so on of everything else in the cluster
// (thousands, in a shared cluster) are neither listed, watched nor held; and of an object that
// carries the label without a ValkeyCluster owning it, only its metadata (strangers.go). Objects the operator
// reads that it did not make (a user's existing password Secret, an object in the way of one
// of its own) are read from the API server directly (Reconciler.APIReader). ValkeyClusters are
// cached whole, but for their managedFields. namespaces limits everything to those namespaces (none: all).
func cacheOptions(namespaces []string) cache.Options {
	ours, err := labels.NewRequirement(kube.LabelCluster, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant label key
	}
	selector := labels.NewSelector().Add(*ours)
	// Nothing reads managedFields (every write is an update or a merge patch, which leave
	// them to the API server), and they are a large part of each cached object.
	opts := cache.Options{ByObject: map[client.Object]cache.ByObject{}, DefaultTransform: cache.TransformStripManagedFields()}
	// Of the objects the operator makes (a ValkeyCluster owns them), everything is kept; of a
	// stranger that carries the label, only what tells it is in the way (strangerTransform).
	for _, o := range []client.Object{
		&corev1.Secret{}, &corev1.Service{}, &corev1.ConfigMap{},
		&appsv1.StatefulSet{}, &policyv1.PodDisruptionBudget{}, &networkingv1.NetworkPolicy{},
	} {
		opts.ByObject[o] = cache.ByObject{Label: selector, Transform: strangerTransform}
	}
	// Claims come from the StatefulSets' templates and have no owner: kept whole (a claim is
	// small and bounded by its schema, and creating claims is what storage quotas limit).
	opts.ByObject[&corev1.PersistentVolumeClaim{}] = cache.ByObject{Label: selector}
	opts.ByObject[&corev1.Pod{}] = cache.ByObject{Label: selector, Transform: podTransform}
	return withNamespaces(opts, namespaces)
}

// podTransform keeps of a cached Pod what the operator reads: its metadata (labels, annotations,
// deletion, UID) and the status it observes (IP, conditions, container states). The spec is
// the StatefulSet's template, which the operator reads from the StatefulSet; in a Pod it was
// the largest part of the cache (heap profile of BenchmarkManyClusters). Pods are only ever
// patched (a merge patch of a label) or deleted, never updated whole, so nothing written
// back can lose what is dropped here.
func podTransform(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	pod.Spec = corev1.PodSpec{}
	pod.Status = corev1.PodStatus{
		Phase:             pod.Status.Phase,
		Conditions:        pod.Status.Conditions,
		PodIP:             pod.Status.PodIP,
		ContainerStatuses: pod.Status.ContainerStatuses,
	}
	return pod, nil
}

// withNamespaces limits opts to namespaces (none: all).
func withNamespaces(opts cache.Options, namespaces []string) cache.Options {
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// splitNamespaces reads --watch-namespace: one namespace or several, comma-separated.
func splitNamespaces(s string) []string {
	var out []string
	for _, ns := range strings.Split(s, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}
