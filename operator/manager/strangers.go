package manager

import (
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// The label the cache selects on is no proof that the operator made an object: anyone who may
// create ConfigMaps or Secrets in a watched namespace may put it on theirs, a megabyte each, and
// the cache would hold every one. The operator makes its objects with a ValkeyCluster as their
// owner, and reads an object it did not make only to see that it is in the way (kube.Apply,
// EnsureAuth: "exists and is not ours"). So of a stranger the cache keeps what that takes,
// its name, identity, owners and the operator's labels, and nothing that its author sizes.

// madeForACluster says whether o is owned by a ValkeyCluster: one of the objects the operator
// makes. Which cluster is checked where it matters (by UID).
func madeForACluster(o metav1.Object) bool {
	for _, ref := range o.GetOwnerReferences() {
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == v1beta1.SchemeGroupVersion.Group && ref.Kind == "ValkeyCluster" {
			return true
		}
	}
	return false
}

// strangerTransform drops managedFields of every object, and keeps of one no ValkeyCluster
// owns only the metadata that tells it is in the way: an empty object of its kind with its
// name, namespace, UID, resource version, owners, deletion and the operator's own labels.
func strangerTransform(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	o.SetManagedFields(nil)
	if madeForACluster(o) {
		return o, nil
	}
	kept, ok := reflect.New(reflect.TypeOf(o).Elem()).Interface().(client.Object)
	if !ok {
		return o, nil
	}
	kept.SetName(o.GetName())
	kept.SetNamespace(o.GetNamespace())
	kept.SetUID(o.GetUID())
	kept.SetResourceVersion(o.GetResourceVersion())
	kept.SetGeneration(o.GetGeneration())
	kept.SetCreationTimestamp(o.GetCreationTimestamp())
	kept.SetDeletionTimestamp(o.GetDeletionTimestamp())
	kept.SetOwnerReferences(o.GetOwnerReferences())
	labels := map[string]string{}
	for k, v := range o.GetLabels() {
		if strings.HasPrefix(k, v1beta1.SchemeGroupVersion.Group+"/") {
			labels[k] = v
		}
	}
	kept.SetLabels(labels)
	return kept, nil
}
