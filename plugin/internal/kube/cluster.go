package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// ValkeyClusters is the resource of the ValkeyCluster kind.
var ValkeyClusters = v1beta1.SchemeGroupVersion.WithResource("valkeyclusters")

// ClusterResource is a client of the ValkeyClusters of one namespace.
func ClusterResource(dyn dynamic.Interface, namespace string) dynamic.ResourceInterface {
	return dyn.Resource(ValkeyClusters).Namespace(namespace)
}

// GetCluster reads a ValkeyCluster, with an error a user can act on when it is missing.
func GetCluster(ctx context.Context, dyn dynamic.Interface, namespace, name string) (*unstructured.Unstructured, error) {
	u, err := ClusterResource(dyn, namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, NotFoundHint(err, namespace, name)
	}
	return u, nil
}

// NotFoundHint rewords a NotFound error. The API server answers 404 both for a missing
// object and for a missing resource type; only the first names the object in its details,
// and the second means the CRD is not installed.
func NotFoundHint(err error, namespace, name string) error {
	if !apierrors.IsNotFound(err) {
		return err
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil && status.Status().Details.Name == name {
		return fmt.Errorf("ValkeyCluster %s/%s not found", namespace, name)
	}
	return fmt.Errorf("the API server does not serve %s: is the ValkeyCluster CRD installed? (%w)",
		schema.GroupResource{Group: ValkeyClusters.Group, Resource: ValkeyClusters.Resource}, err)
}

// GetTypedCluster reads a ValkeyCluster as GetCluster does and converts it as Typed does.
func GetTypedCluster(ctx context.Context, dyn dynamic.Interface, namespace, name string) (*v1beta1.ValkeyCluster, error) {
	u, err := GetCluster(ctx, dyn, namespace, name)
	if err != nil {
		return nil, err
	}
	return Typed(u)
}

// Typed converts a ValkeyCluster read with the dynamic client.
func Typed(u *unstructured.Unstructured) (*v1beta1.ValkeyCluster, error) {
	var vc v1beta1.ValkeyCluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &vc); err != nil {
		return nil, fmt.Errorf("reading ValkeyCluster %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &vc, nil
}

// Unstructured converts a typed ValkeyCluster, as tests and the status writer of the
// end-to-end test need it.
func Unstructured(vc *v1beta1.ValkeyCluster) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(vc)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(v1beta1.SchemeGroupVersion.WithKind("ValkeyCluster"))
	return u, nil
}

// Annotate sets (or, with an empty value, removes) one annotation of a ValkeyCluster with a
// merge patch: the verbs that trigger operations only write intent, the operator does the work.
func Annotate(ctx context.Context, dyn dynamic.Interface, namespace, name, key, value string) error {
	var v any = value
	if value == "" {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	if err != nil {
		return err
	}
	_, err = ClusterResource(dyn, namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return NotFoundHint(err, namespace, name)
}
